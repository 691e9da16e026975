import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelSchema } from '../../src/config/kernel.js';
import type { KildeApp } from '../../src/http/app.js';
import { JSON_SHAPES } from '../../src/http/body-limits.js';
import { testApp, testConfig } from '../helpers/app.js';

const shape = { depth: 4, keys: 10, items: 20, values: 100 };

describe('the JSON body parser', () => {
  let app: KildeApp;
  let logs: Awaited<ReturnType<typeof testApp>>['logs'];
  beforeAll(async () => {
    const t = await testApp(testConfig(kernelSchema, {}), [
      {
        name: 'echo-body',
        register(scope) {
          scope.post('/small', { bodyLimit: 4096, config: { jsonShape: shape } }, async (r) => ({
            got: r.body,
          }));
          scope.post('/plain', async (r) => ({ got: r.body }));
        },
      },
    ]);
    app = t.app;
    logs = t.logs;
    await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app.close();
  });

  const post = (url: string, payload: string) =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });

  it('parses a body within its route limits as before', async () => {
    const body = { a: [1, 2, { b: 'x"}' }], c: null };
    const res = await post('/small', JSON.stringify(body));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ got: body });
  });

  it('refuses each structural limit with 413 INVALID_REQUEST, naming it', async () => {
    const keys = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i]));
    const cases: [unknown, string][] = [
      [keys, 'more than 10 keys in one object'],
      [Array.from({ length: 21 }, () => 0), 'more than 20 items in one array'],
      [[[[[[]]]]], 'more than 4 levels of nesting'],
      [
        Array.from({ length: 10 }, () => [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        'more than 100 keys and values in all',
      ],
    ];
    for (const [body, what] of cases) {
      const res = await post('/small', JSON.stringify(body));
      expect(res.statusCode).toBe(413);
      expect(res.json()).toEqual({ detail: `Request body too complex: ${what}`, code: 'INVALID_REQUEST' });
    }
    const line = logs.lines.find((l) => l.path === '/small' && l.status === 413);
    expect(line).toMatchObject({ code: 'INVALID_REQUEST', shape: 'keys' });
  });

  it('gives a route without its own limits the default ones', async () => {
    const keys = Object.fromEntries(
      Array.from({ length: JSON_SHAPES.default.keys + 1 }, (_, i) => [`k${i}`, 1]),
    );
    expect((await post('/plain', JSON.stringify(keys))).statusCode).toBe(413);
    const fits = Object.fromEntries(Object.entries(keys).slice(1));
    expect((await post('/plain', JSON.stringify(fits))).statusCode).toBe(200);
  });

  it("keeps Fastify's answers: empty, malformed, proto-poisoned and too large", async () => {
    expect((await post('/small', '')).json()).toEqual({
      detail: 'Request body is empty',
      code: 'INVALID_REQUEST',
    });
    expect((await post('/small', '{"a":')).json()).toEqual({
      detail: 'Malformed JSON body',
      code: 'INVALID_REQUEST',
    });
    const poisoned = await post('/small', '{"__proto__":{"admin":true}}');
    expect(poisoned.statusCode).toBe(400);
    const ctor = await post('/small', '{"constructor":{"prototype":{"admin":true}}}');
    expect(ctor.statusCode).toBe(400);
    const big = await post('/small', JSON.stringify({ pad: 'x'.repeat(5000) }));
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({ detail: 'Request body too large', code: 'INVALID_REQUEST' });
    const bom = await post('/small', '\uFEFF{"a":1}');
    expect(bom.json()).toEqual({ got: { a: 1 } });
  });

  it('answers 413 as soon as the limit is crossed, without waiting for the rest of the body', async () => {
    const { port } = app.server.address() as AddressInfo;
    // The client announces a body it never finishes: only a refusal mid-stream can answer it.
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/small',
        headers: { 'content-type': 'application/json', 'content-length': '4000' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.write(`{${Array.from({ length: 11 }, (_, i) => `"k${i}":1`).join(',')}`);
    });
    expect(status).toBe(413);
  });
});
