import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgentPart } from '../../src/agent/part.js';
import { agentSchema } from '../../src/config/agent.js';
import type { KildeApp } from '../../src/http/app.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { AUTH, testApp, testConfig } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';

let llm: FakeChatServer;
let app: KildeApp | undefined;

beforeAll(async () => {
  llm = await startFakeChatServer();
});
afterAll(() => llm.close());
afterEach(async () => {
  await app?.close();
  app = undefined;
  llm.requests.length = 0;
  llm.mode = { kind: 'ok' };
});

async function make(env: Record<string, string> = {}, clock?: ManualClock) {
  const config = testConfig(agentSchema, {
    AGENT_API_BASE_URL: llm.baseUrl,
    AGENT_API_KEY: 'llm-key',
    AGENT_MODEL: 'tiny-model',
    ...env,
  });
  ({ app } = await testApp(config, [createAgentPart(config, clock ? { clock } : {})]));
  return app;
}

describe('POST /echo', () => {
  it.each([
    ['without', ''],
    ['with', '/'],
  ])('calls {base}/chat/completions keeping /v1 (base %s a trailing slash)', async (_w, slash) => {
    await make({ AGENT_API_BASE_URL: `${llm.baseUrl}${slash}` });
    const res = await app!.inject({
      method: 'POST',
      url: '/echo',
      headers: AUTH,
      payload: { text: 'Hello there, my friend' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      original: 'Hello there, my friend',
      rewritten: 'short: Hello there, my friend',
    });
    const sent = llm.requests.at(-1)!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer llm-key');
    const body = sent.json as { model: string; messages: { role: string; content: string }[] };
    expect(body.model).toBe('tiny-model');
    expect(body.messages).toHaveLength(2);
    expect(body.messages[0]!.role).toBe('system');
    expect(body.messages[0]!.content).toMatch(/concise/i);
    expect(body.messages[1]).toEqual({ role: 'user', content: 'Hello there, my friend' });
  });

  it('requires the bearer key', async () => {
    await make();
    const res = await app!.inject({ method: 'POST', url: '/echo', payload: { text: 'x' } });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: 'Invalid API key' });
    expect(llm.requests).toHaveLength(0);
  });

  it.each([
    ['empty text', { text: '' }],
    ['too long', { text: 'x'.repeat(10_001) }],
    ['missing', {}],
    ['wrong type', { text: 5 }],
  ])('rejects %s with 422', async (_name, payload) => {
    await make();
    const res = await app!.inject({ method: 'POST', url: '/echo', headers: AUTH, payload });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toMatch(/text/);
    expect(llm.requests).toHaveLength(0);
  });

  it('accepts exactly 10000 characters', async () => {
    await make();
    const res = await app!.inject({
      method: 'POST',
      url: '/echo',
      headers: AUTH,
      payload: { text: 'y'.repeat(10_000) },
    });
    expect(res.statusCode).toBe(200);
  });

  it.each([
    [500, 'LLM endpoint answered HTTP 500'],
    [429, 'LLM endpoint answered HTTP 429'],
    [401, 'LLM endpoint answered HTTP 401'],
  ])('maps upstream %i to 502 LLM_FAILED', async (status, message) => {
    await make();
    llm.mode = { kind: 'status', status };
    const res = await app!.inject({ method: 'POST', url: '/echo', headers: AUTH, payload: { text: 'hi' } });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ detail: message, code: 'LLM_FAILED' });
  });

  it('maps a malformed body to 502, never undefined', async () => {
    await make();
    llm.mode = { kind: 'malformed' };
    let res = await app!.inject({ method: 'POST', url: '/echo', headers: AUTH, payload: { text: 'hi' } });
    expect(res.statusCode).toBe(502);
    expect(res.json().code).toBe('LLM_FAILED');
    llm.mode = { kind: 'no-content' };
    res = await app!.inject({ method: 'POST', url: '/echo', headers: AUTH, payload: { text: 'hi' } });
    expect(res.statusCode).toBe(502);
    expect(res.json().detail).toMatch(/choices\[0\]\.message\.content/);
  });

  it('answers 504 LLM_TIMEOUT when the LLM is slower than AGENT_TIMEOUT', async () => {
    const clock = new ManualClock();
    await make({ AGENT_TIMEOUT: '1' }, clock);
    llm.mode = { kind: 'slow', delayMs: 2500 };
    const sent = llm.requests.length;
    const pending = app!.inject({ method: 'POST', url: '/echo', headers: AUTH, payload: { text: 'hi' } });
    // The request reaches the LLM, then one second passes on the service's clock.
    while (llm.requests.length === sent) await new Promise((r) => setImmediate(r));
    clock.advance(1000);
    const res = await pending;
    expect(res.statusCode).toBe(504);
    expect(res.json()).toEqual({ detail: 'LLM endpoint did not answer within 1 s', code: 'LLM_TIMEOUT' });
  });

  it('answers 502 when the LLM is unreachable', async () => {
    await make({ AGENT_API_BASE_URL: 'http://127.0.0.1:9/v1' });
    const res = await app!.inject({ method: 'POST', url: '/echo', headers: AUTH, payload: { text: 'hi' } });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ detail: 'LLM endpoint unreachable', code: 'LLM_FAILED' });
  });
});

describe('agent readiness', () => {
  it('probes GET {base}/models', async () => {
    await make();
    const res = await app!.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(llm.requests.at(-1)!.path).toBe('/v1/models');
    expect(llm.requests.at(-1)!.headers.authorization).toBe('Bearer llm-key');
  });

  it('is 503 with detail when the LLM endpoint fails', async () => {
    await make();
    llm.mode = { kind: 'status', status: 503 };
    const res = await app!.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      status: 'error',
      detail: `llm: GET ${llm.baseUrl}/models answered HTTP 503`,
    });
  });
});
