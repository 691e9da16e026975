import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelSchema } from '../../src/config/kernel.js';
import type { KildeApp } from '../../src/http/app.js';
import { bearerMatches } from '../../src/http/auth.js';
import { testApp, testConfig } from '../helpers/app.js';

describe('bearerMatches', () => {
  it.each([
    ['Bearer secret', true],
    ['Bearer   secret  ', true],
    ['bearer secret', false],
    ['Bearer', false],
    ['Bearer ', false],
    ['Basic secret', false],
    ['Bearer secret2', false],
    ['Bearer secre', false],
    ['secret', false],
    ['Bearer sécret', false],
    ['Bearer 秘密', false],
  ])('%j → %s', (header, ok) => {
    expect(bearerMatches(header, 'secret')).toBe(ok);
  });

  it('rejects a missing or repeated header', () => {
    expect(bearerMatches(undefined, 'secret')).toBe(false);
    expect(bearerMatches(['Bearer secret', 'Bearer secret'], 'secret')).toBe(false);
  });
});

describe('protected routes', () => {
  let app: KildeApp;
  beforeAll(async () => {
    const config = testConfig(kernelSchema, {});
    ({ app } = await testApp(config, [
      {
        name: 'probe-route',
        register(a, ctx) {
          a.get('/secret', { onRequest: ctx.auth }, async () => ({ ok: true }));
        },
      },
    ]));
  });
  afterAll(() => app.close());

  it.each([
    ['missing', undefined],
    ['wrong', 'Bearer nope'],
    ['lowercase scheme', 'bearer test-key'],
    ['no space', 'Bearertest-key'],
  ])('answers 401 with the contract body when the header is %s', async (_name, header) => {
    const res = await app.inject({
      method: 'GET',
      url: '/secret',
      headers: header ? { authorization: header } : {},
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: 'Invalid API key' });
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('answers 401, not 500, for a non-ASCII token on the wire', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as import('node:net').AddressInfo;
    const net = await import('node:net');
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1', () => {
        sock.write(
          Buffer.concat([
            Buffer.from('GET /secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer '),
            Buffer.from('nøgle', 'utf8'),
            Buffer.from('\r\n\r\n'),
          ]),
        );
      });
      let out = '';
      sock.on('data', (d) => {
        out += d.toString('utf8');
      });
      sock.on('end', () => resolve(out));
      sock.on('error', reject);
    });
    expect(raw.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
  });

  it('accepts the right key with surrounding spaces', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/secret',
      headers: { authorization: 'Bearer  test-key ' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true });
  });
});
