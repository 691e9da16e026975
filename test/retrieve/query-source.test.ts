import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatClient } from '../../src/llm/chat-client.js';
import { resolveQueries } from '../../src/retrieve/query-source.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';

let llm: FakeChatServer;
beforeAll(async () => {
  llm = await startFakeChatServer();
});
afterAll(() => llm.close());

const log = pino({ level: 'silent' });
const client = () => createChatClient({ baseUrl: llm.baseUrl, apiKey: 'k', model: 'm', timeoutMs: 1000 });
const messages = [
  { role: 'user', content: 'Tell me about the Spanish flu' },
  { role: 'assistant', content: 'It was a pandemic in 1918.' },
  { role: 'user', content: 'How many died in Denmark?' },
];

describe('query source', () => {
  it('uses explicit queries when there are no messages', async () => {
    const r = await resolveQueries(
      { queries: [' a ', '', 'b'] },
      { llm: client(), generate: true, lastMessages: 6, maxQueries: 3, log },
    );
    expect(r).toEqual({ queries: ['a', 'b'], source: 'explicit' });
  });

  it('generates queries from the last messages with strict JSON', async () => {
    llm.mode = {
      kind: 'ok',
      reply: () => '{"queries": ["Spanish flu deaths Denmark 1918", "Spanish flu Denmark"]}',
    };
    const r = await resolveQueries(
      { messages },
      { llm: client(), generate: true, lastMessages: 2, maxQueries: 3, log },
    );
    expect(r).toEqual({
      queries: ['Spanish flu deaths Denmark 1918', 'Spanish flu Denmark'],
      source: 'generated',
    });
    const body = llm.requests.at(-1)!.json as { messages: { role: string; content: string }[] };
    expect(body.messages[0]!.role).toBe('system');
    // only the last two messages are shown to the model
    expect(body.messages[1]!.content).not.toContain('Tell me about');
    expect(body.messages[1]!.content).toContain('How many died in Denmark?');
  });

  it('caps the number of generated queries', async () => {
    llm.mode = { kind: 'ok', reply: () => '```json\n{"queries": ["a", "b", "c", "d"]}\n```' };
    const r = await resolveQueries(
      { messages },
      { llm: client(), generate: true, lastMessages: 6, maxQueries: 2, log },
    );
    expect(r.queries).toEqual(['a', 'b']);
  });

  it.each([
    ['prose instead of JSON', { kind: 'ok' as const, reply: () => 'Sure! Here are queries: flu' }],
    ['JSON of the wrong shape', { kind: 'ok' as const, reply: () => '{"query": "x"}' }],
    ['an HTTP 500', { kind: 'status' as const, status: 500 }],
    ['a time-out', { kind: 'slow' as const, delayMs: 1500 }],
  ])('falls back to the last user message on %s', async (_name, mode) => {
    llm.mode = mode;
    const fallbacks: string[] = [];
    const r = await resolveQueries(
      { messages, queries: ['ignored'] },
      {
        llm: client(),
        generate: true,
        lastMessages: 6,
        maxQueries: 3,
        log,
        onFallback: (x) => fallbacks.push(x),
      },
    );
    expect(r).toEqual({ queries: ['How many died in Denmark?'], source: 'fallback' });
    expect(fallbacks).toHaveLength(1);
  });

  it('uses the last user message when generation is off and no queries are given', async () => {
    const r = await resolveQueries(
      { messages },
      { llm: undefined, generate: false, lastMessages: 6, maxQueries: 3, log },
    );
    expect(r).toEqual({ queries: ['How many died in Denmark?'], source: 'last-user' });
  });
});
