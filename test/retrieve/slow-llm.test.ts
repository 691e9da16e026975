import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { AUTH } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { type Harness, multipartBody, startIngest } from '../ingest/helpers/harness.js';
import { type HostileServer, startServer } from '../reliability/hostile-server.js';
import { startRetrieve } from './helpers/retrieve.js';

/*
 * A slow or hung LLM (issue #31): chat searches wait for query generation no longer than
 * QUERY_GENERATION_TIMEOUT, then search the last user message; and in `serve all`, whose search works
 * without the LLM, its readiness probe only reports it as degraded.
 */
let chat: FakeChatServer;
let ingest: Harness;

beforeAll(async () => {
  chat = await startFakeChatServer();
  ingest = await startIngest({ EMBEDDING_PROVIDER: 'none', CHUNK_SPLIT_BY: 'markdown' });
  const { body, headers } = multipartBody(
    { file_id: 'bread', filename: 'bread.md', collection_name: 'kb', user_id: 'u1' },
    {
      name: 'bread.md',
      content: '# Rye bread\n\nDanish rye bread (rugbrød) is dark and dense.',
      type: 'text/markdown',
    },
  );
  const res = await ingest.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
  await ingest.settle(); // the retrieval app opens its own index on the data directory
});

afterAll(async () => {
  await ingest?.close();
  await chat?.close();
});

describe('query generation with a hung LLM', () => {
  it('gives up after QUERY_GENERATION_TIMEOUT (10 s by default, not AGENT_TIMEOUT) and searches the last user message', async () => {
    const clock = new ManualClock();
    const r = await startRetrieve(
      {
        KILDE_DATA_DIR: ingest.dataDir,
        EMBEDDING_PROVIDER: 'none',
        ENABLE_QUERY_GENERATION: 'true',
        AGENT_API_BASE_URL: chat.baseUrl,
      },
      { clock },
    );
    try {
      chat.mode = { kind: 'hang' };
      const asked = chat.requests.length;
      const search = r.search({
        messages: [{ role: 'user', content: 'What is Danish rye bread like?' }],
        collection_names: ['kb'],
        k: 1,
      });
      // The LLM has the request; its time-out is the only timer that can end the wait.
      while (chat.requests.length === asked) await new Promise((resolve) => setImmediate(resolve));
      await clock.whenPending();
      clock.advance(9_999);
      clock.advance(1);
      const { status, json } = await search;
      expect(status).toBe(200);
      expect(json.metadatas[0][0].file_id).toBe('bread');
      expect(r.logs.text()).toContain('query generation failed; falling back');
      expect(r.logs.text()).toContain('LLM endpoint did not answer within 10 s');
      expect(await r.metrics()).toMatch(/retrieve_fallbacks_total\{kind="query_generation"\} 1/);
    } finally {
      chat.mode = { kind: 'ok' };
      await r.close();
    }
  });
});

describe('readiness with the LLM down', () => {
  let all: HostileServer;
  beforeAll(async () => {
    all = await startServer({ AGENT_API_BASE_URL: chat.baseUrl });
  });
  afterAll(() => all?.close());

  it('serve all stays ready, reporting the LLM as degraded; back to plain ok once it answers', async () => {
    chat.mode = { kind: 'status', status: 503 };
    try {
      const down = await fetch(`${all.url}/health/ready`);
      expect(down.status).toBe(200);
      expect(await down.json()).toEqual({
        status: 'ok',
        degraded: expect.stringMatching(/^llm: GET .*\/models answered HTTP 503$/),
      });
    } finally {
      chat.mode = { kind: 'ok' };
    }
    const up = await fetch(`${all.url}/health/ready`);
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ status: 'ok' });
  });
});
