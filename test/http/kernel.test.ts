import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { kernelSchema } from '../../src/config/kernel.js';
import { KildeError } from '../../src/errors.js';
import type { KildeApp, ServicePart } from '../../src/http/app.js';
import { AUTH, testApp, testConfig } from '../helpers/app.js';

const demo: ServicePart = {
  name: 'demo',
  register(app, ctx) {
    app.post(
      '/things',
      {
        onRequest: ctx.auth,
        schema: { body: z.object({ name: z.string().min(1), count: z.number().int() }) },
      },
      async (req) => ({ got: req.body.name }),
    );
    app.get('/boom', async () => {
      throw new Error('secret database password in stack');
    });
    app.get('/upstream', async () => {
      throw new KildeError('LLM_FAILED', 'LLM endpoint answered HTTP 500', {
        detail: 'internal trace',
        expose: true,
      });
    });
    app.get('/hidden', async () => {
      throw new KildeError('EMBEDDING_FAILED', 'POST http://10.0.0.7:8080/embed answered 500', {
        detail: 'trace',
      });
    });
  },
};

let app: KildeApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function make(env: Record<string, string> = {}, parts: ServicePart[] = [demo]) {
  const built = await testApp(testConfig(kernelSchema, env), parts);
  app = built.app;
  return built;
}

describe('health', () => {
  it('is alive whatever the probes say', async () => {
    await make({}, [
      {
        name: 'p',
        register() {},
        probes: [{ name: 'db', check: async () => Promise.reject(new Error('down')) }],
      },
    ]);
    const res = await app!.inject({ url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('is ready when every probe passes', async () => {
    await make({}, [{ name: 'p', register() {}, probes: [{ name: 'db', check: async () => {} }] }]);
    const res = await app!.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('answers 503 naming the failing probe and why', async () => {
    await make({}, [
      {
        name: 'p',
        register() {},
        probes: [
          { name: 'db', check: async () => {} },
          { name: 'llm', check: async () => Promise.reject(new Error('connection refused')) },
        ],
      },
    ]);
    const res = await app!.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'error', detail: 'llm: connection refused' });
  });

  it('times out a hanging probe', async () => {
    await make({}, [
      {
        name: 'p',
        register() {},
        probes: [{ name: 'slow', timeoutMs: 50, check: () => new Promise(() => {}) }],
      },
    ]);
    const res = await app!.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json().detail).toBe('slow: no answer within 50 ms');
  });
});

describe('errors', () => {
  it('answers 400 for invalid JSON', async () => {
    await make();
    const res = await app!.inject({
      method: 'POST',
      url: '/things',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'INVALID_REQUEST', detail: 'Malformed JSON body' });
  });

  it('answers 422 naming the offending fields', async () => {
    await make();
    const res = await app!.inject({
      method: 'POST',
      url: '/things',
      headers: AUTH,
      payload: { name: '', count: 1.5 },
    });
    expect(res.statusCode).toBe(422);
    const body = res.json();
    expect(body.code).toBe('INVALID_REQUEST');
    expect(body.detail).toMatch(/name/);
    expect(body.detail).toMatch(/count/);
  });

  it('answers 415 for an unsupported Content-Type', async () => {
    await make();
    const res = await app!.inject({
      method: 'POST',
      url: '/things',
      headers: { ...AUTH, 'content-type': 'text/csv' },
      payload: 'a,b',
    });
    expect(res.statusCode).toBe(415);
  });

  it('answers 415 for text/plain too (Fastify parses it by default; no JSON route wants it)', async () => {
    await make();
    const res = await app!.inject({
      method: 'POST',
      url: '/things',
      headers: { ...AUTH, 'content-type': 'text/plain' },
      payload: '{"name":"a","count":1}',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toEqual({ detail: 'Unsupported Content-Type', code: 'INVALID_REQUEST' });
  });

  it('answers unknown routes with 404 JSON', async () => {
    await make();
    const res = await app!.inject({ url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'Not found: GET /nope', code: 'NOT_FOUND' });
  });

  it('hides 5xx internals unless DEBUG', async () => {
    const { logs } = await make();
    const res = await app!.inject({ url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toMatch(/password/);
    expect(res.json()).toEqual({ detail: 'Internal server error', code: 'INTERNAL' });
    expect(logs.text()).toMatch(/secret database password/);
    const up = await app!.inject({ url: '/upstream' });
    expect(up.statusCode).toBe(502);
    expect(up.json()).toEqual({ detail: 'LLM endpoint answered HTTP 500', code: 'LLM_FAILED' });
    // A 5xx message not written for clients gives way to the code's public message.
    const hidden = await app!.inject({ url: '/hidden' });
    expect(hidden.statusCode).toBe(502);
    expect(hidden.json()).toEqual({ detail: 'Embedding failed', code: 'EMBEDDING_FAILED' });
  });

  it('shows 5xx internals with DEBUG=true', async () => {
    await make({ DEBUG: 'true' });
    const res = await app!.inject({ url: '/boom' });
    expect(res.json().debug).toMatch(/secret database password/);
    const up = await app!.inject({ url: '/upstream' });
    expect(up.json().debug).toBe('internal trace');
    const hidden = await app!.inject({ url: '/hidden' });
    expect(hidden.json().debug).toBe('POST http://10.0.0.7:8080/embed answered 500: trace');
  });
});

describe('logs', () => {
  it('carries request ids and never the Authorization header', async () => {
    const { logs } = await make();
    const res = await app!.inject({
      url: '/things',
      method: 'POST',
      headers: AUTH,
      payload: { name: 'a', count: 1 },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBeTruthy();
    const text = logs.text();
    expect(text).toContain(String(res.headers['x-request-id']));
    expect(text).not.toContain('test-key');
  });
});

describe('metrics', () => {
  it('serves Prometheus text behind the bearer key, with request counts by route and status', async () => {
    await make();
    await app!.inject({ url: '/health' });
    expect((await app!.inject({ url: '/metrics' })).statusCode).toBe(401);
    const res = await app!.inject({ url: '/metrics', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/health",status="200"\} 1/);
    expect(res.body).toMatch(/http_request_duration_seconds_bucket\{/);
    // Read at the scrape: the process's resident memory, and LanceDB's caches (none open here).
    const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(res.body)?.[1]);
    expect(rss).toBeGreaterThan(10 * 1024 * 1024);
    expect(res.body).toMatch(/^lancedb_cache_bytes 0$/m);
  });

  it('is 404 when METRICS_ENABLED=false', async () => {
    await make({ METRICS_ENABLED: 'false' });
    expect((await app!.inject({ url: '/metrics', headers: AUTH })).statusCode).toBe(404);
  });
});
