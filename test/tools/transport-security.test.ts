import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostAllowed, originAllowed, originsFromHosts } from '../../src/mcp/transport-security.js';
import { type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { INIT_PARAMS, MCP_HEADERS, messagesOf, raw, rpc, startTools, type ToolsHarness } from './harness.js';

let up: FakeWeather;
let h: ToolsHarness | undefined;

beforeAll(async () => {
  up = await startFakeWeather();
});
afterAll(() => up.close());
afterEach(async () => {
  await h?.app.close();
  h = undefined;
  up.mode = { kind: 'ok' };
});

const init = rpc('initialize', INIT_PARAMS);

describe('Host / Origin / Content-Type checks on /mcp', () => {
  it('answers 421 for a Host outside MCP_ALLOWED_HOSTS, before the SDK sees it', async () => {
    h = await startTools(up.url);
    const res = await raw(h.mcpUrl.href, {
      headers: { ...MCP_HEADERS, host: 'evil.example.com' },
      body: init,
    });
    expect(res.status).toBe(421);
    expect(JSON.parse(res.text)).toEqual({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Invalid Host header: evil.example.com' },
      id: null,
    });
    expect(h.logs.text()).toMatch(/rejected Host/);
  });

  it.each(['tools:8000', 'tools', 'localhost:3000', '127.0.0.1:8000', '[::1]:8000'])(
    'accepts the default Host %s',
    async (host) => {
      h = await startTools(up.url);
      const res = await raw(h.mcpUrl.href, { headers: { ...MCP_HEADERS, host }, body: init });
      expect(res.status).toBe(200);
    },
  );

  it('answers 403 for an Origin that is not allowed; no Origin or an allowed one passes', async () => {
    h = await startTools(up.url);
    const bad = await raw(h.mcpUrl.href, {
      headers: { ...MCP_HEADERS, origin: 'https://evil.example.com' },
      body: init,
    });
    expect(bad.status).toBe(403);
    expect(JSON.parse(bad.text).error.message).toBe('Invalid Origin header: https://evil.example.com');
    for (const origin of ['http://localhost:5173', 'https://tools:8000']) {
      const ok = await raw(h.mcpUrl.href, { headers: { ...MCP_HEADERS, origin }, body: init });
      expect(ok.status, origin).toBe(200);
    }
  });

  it('uses MCP_ALLOWED_ORIGINS and MCP_ALLOWED_HOSTS when set', async () => {
    h = await startTools(up.url, {
      MCP_ALLOWED_HOSTS: '["mcp.example.com", "127.0.0.1:*"]',
      MCP_ALLOWED_ORIGINS: '["https://chat.example.com"]',
    });
    const send = (headers: Record<string, string>) =>
      raw(h!.mcpUrl.href, { headers: { ...MCP_HEADERS, ...headers }, body: init });
    expect((await send({ host: 'mcp.example.com' })).status).toBe(200);
    expect((await send({ host: 'mcp.example.com:8443' })).status).toBe(421); // no port wildcard
    expect((await send({ host: 'localhost:8000' })).status).toBe(421);
    expect((await send({ origin: 'https://chat.example.com' })).status).toBe(200);
    expect((await send({ origin: 'http://chat.example.com' })).status).toBe(403);
    expect((await send({ origin: 'null' })).status).toBe(403);
  });

  it('answers 400 for a POST whose Content-Type is not application/json', async () => {
    h = await startTools(up.url);
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/json-patch+json']) {
      const res = await raw(h.mcpUrl.href, { headers: { ...MCP_HEADERS, 'content-type': ct }, body: init });
      expect(res.status, ct).toBe(400);
      expect(JSON.parse(res.text).error.message).toBe('Bad Request: Content-Type must be application/json');
    }
    const missing = await raw(h.mcpUrl.href, { headers: { accept: MCP_HEADERS.accept }, body: init });
    expect(missing.status).toBe(400);
    const charset = await raw(h.mcpUrl.href, {
      headers: { ...MCP_HEADERS, 'content-type': 'application/json; charset=utf-8' },
      body: init,
    });
    expect(charset.status).toBe(200);
  });

  it('does not apply to the health and REST routes', async () => {
    h = await startTools(up.url);
    const health = await raw(`${h.base}/health/ready`, {
      method: 'GET',
      headers: { host: 'evil.example.com' },
    });
    expect(health.status).toBe(200);
  });
});

describe('pattern matching', () => {
  it('matches ports, wildcards, IPv6 and the loopback aliases of localhost', () => {
    const p = ['tools:*', 'localhost:*', 'api.example.com:443'];
    expect(hostAllowed('tools', p)).toBe(true);
    expect(hostAllowed('TOOLS:8000', p)).toBe(true);
    expect(hostAllowed('127.0.0.1:1234', p)).toBe(true);
    expect(hostAllowed('[::1]', p)).toBe(true);
    expect(hostAllowed('api.example.com:443', p)).toBe(true);
    expect(hostAllowed('api.example.com', p)).toBe(false);
    expect(hostAllowed('tools.evil.com', p)).toBe(false);
    expect(hostAllowed('127.0.0.2:80', p)).toBe(false);
    expect(hostAllowed(undefined, p)).toBe(false);
    expect(hostAllowed('anything', [])).toBe(true);
    const origins = originsFromHosts(p);
    expect(originAllowed('http://localhost:5173', origins)).toBe(true);
    expect(originAllowed('https://api.example.com', origins)).toBe(true); // default port 443
    expect(originAllowed('ftp://tools', origins)).toBe(false);
    expect(originAllowed('null', origins)).toBe(false);
  });
});

describe('optional bearer guard (MCP_BEARER_AUTH=true)', () => {
  const guardOn = { MCP_BEARER_AUTH: 'true' };

  it.each([
    ['no Authorization header', undefined],
    ['a wrong key', 'Bearer wrong-key'],
    ['another scheme', 'Basic dGVzdC1rZXk='],
    ['a lower-case scheme', 'bearer test-key'],
    ['a non-ASCII token', 'Bearer tëst-kéy'],
  ])('answers 401 with WWW-Authenticate and a plain-text body for %s', async (_name, authorization) => {
    h = await startTools(up.url, guardOn);
    const headers: Record<string, string> = { ...MCP_HEADERS, ...(authorization ? { authorization } : {}) };
    const res = await raw(h.mcpUrl.href, { headers, body: init });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toBe('missing or invalid bearer token');
  });

  it('lets the right key through (surrounding whitespace trimmed) and guards every /mcp path', async () => {
    h = await startTools(up.url, guardOn);
    const ok = await raw(h.mcpUrl.href, {
      headers: { ...MCP_HEADERS, authorization: 'Bearer   test-key  ' },
      body: init,
    });
    expect(ok.status).toBe(200);
    const sub = await raw(`${h.mcpUrl.href}/anything`, { method: 'GET' });
    expect(sub.status).toBe(401);
    const subAuthed = await raw(`${h.mcpUrl.href}/anything`, {
      method: 'GET',
      headers: { authorization: 'Bearer test-key' },
    });
    expect(subAuthed.status).toBe(404);
    // The guard covers any request whose path starts with /mcp, not only the /mcp/ sub-tree.
    for (const path of ['/mcp-admin', '/mcpx?y=1']) {
      const sibling = await raw(`${h.base}${path}`, { method: 'GET' });
      expect(sibling.status).toBe(401);
      expect(sibling.headers['www-authenticate']).toBe('Bearer');
      expect(sibling.text).toBe('missing or invalid bearer token');
    }
    const siblingAuthed = await raw(`${h.base}/mcp-admin`, {
      method: 'GET',
      headers: { authorization: 'Bearer test-key' },
    });
    expect(siblingAuthed.status).toBe(404);
  });

  it('leaves health and the REST routes to their own auth', async () => {
    h = await startTools(up.url, guardOn);
    expect((await raw(`${h.base}/health`, { method: 'GET' })).status).toBe(200);
    const rest = await raw(`${h.base}/weather?city=Oslo`, { method: 'GET' });
    expect(rest.status).toBe(401);
    expect(JSON.parse(rest.text)).toEqual({ detail: 'Invalid API key' });
  });

  it('is off by default', async () => {
    h = await startTools(up.url);
    const res = await raw(h.mcpUrl.href, { headers: MCP_HEADERS, body: init });
    expect(res.status).toBe(200);
  });

  it('does not buffer: the event stream arrives incrementally through the guard', async () => {
    h = await startTools(up.url, guardOn);
    up.mode = { kind: 'gated' };
    const upstreamCalled = up.nextRequest();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: 'Bearer test-key', 'mcp-protocol-version': '2025-06-18' },
      body: rpc('tools/call', {
        name: 'get_weather',
        arguments: { city: 'Bergen' },
        _meta: { progressToken: 'p-1' },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    while (!seen.includes('notifications/progress')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early: ${seen}`);
      seen += value;
    }
    // The progress event is on the client while the upstream is still holding the answer back.
    await upstreamCalled;
    expect(seen).not.toContain('"result"');
    up.release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
    const messages = messagesOf('text/event-stream', seen);
    expect(messages.map((m) => m.method ?? 'result')).toEqual(['notifications/progress', 'result']);
    expect(messages[0]!.params).toMatchObject({ progressToken: 'p-1', progress: 0, total: 1 });
    const result = messages[1]!.result as { content: { text: string }[] };
    expect(JSON.parse(result.content[0]!.text).city).toBe('Bergen');
  });
});
