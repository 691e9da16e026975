import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { AUTH } from '../helpers/app.js';
import { INIT_PARAMS, MCP_HEADERS, rpc, startTools, type ToolsHarness } from '../tools/harness.js';

/**
 * CORS (issue #30): off by default; with `CORS_ORIGINS` a browser page on a named origin may call
 * the REST routes and `/mcp` (Open WebUI's user tool servers and browser MCP clients run in the
 * browser). A preflight never needs the key, even on a bearer-guarded `/mcp`; the actual request
 * still does. The tool server stands in for every service: CORS is the kernel's.
 */
const ORIGIN = 'https://chat.example.com';

let up: FakeWeather;
const open: ToolsHarness[] = [];

beforeAll(async () => {
  up = await startFakeWeather();
});
afterAll(() => up.close());
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.app.close()));
});

async function tools(env: Record<string, string> = {}) {
  const h = await startTools(up.url, { MCP_BEARER_AUTH: 'true', ...env });
  open.push(h);
  return h;
}

const preflight = (h: ToolsHarness, url: string, origin = ORIGIN) =>
  h.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
    },
  });

describe('CORS off (the default)', () => {
  it('sends no CORS headers, and the /mcp preflight does not ask for the key', async () => {
    const h = await tools();
    const res = await preflight(h, '/mcp');
    expect(res.statusCode).not.toBe(401);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const get = await h.app.inject({ method: 'GET', url: '/health', headers: { origin: ORIGIN } });
    expect(get.statusCode).toBe(200);
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('CORS_ORIGINS', () => {
  it('answers preflights 204 without the key, /mcp included, allowing the MCP headers', async () => {
    const h = await tools({ CORS_ORIGINS: `${ORIGIN}, https://other.example.org` });
    for (const url of ['/mcp', '/weather?city=Aarhus', '/openapi.json']) {
      const res = await preflight(h, url);
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      const allowed = String(res.headers['access-control-allow-headers']).split(/,\s*/);
      expect(allowed).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version']),
      );
      expect(String(res.headers['access-control-allow-methods'])).toMatch(/POST/);
    }
  });

  it('names no other origin', async () => {
    const h = await tools({ CORS_ORIGINS: ORIGIN });
    const res = await preflight(h, '/mcp', 'https://evil.example.net');
    expect(res.statusCode).not.toBe(401);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('lets the page read the answer and the MCP session headers; the key is still required', async () => {
    const h = await tools({ CORS_ORIGINS: ORIGIN, MCP_ALLOWED_ORIGINS: JSON.stringify([ORIGIN]) });
    const init = await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...MCP_HEADERS, ...AUTH, origin: ORIGIN },
      payload: rpc('initialize', INIT_PARAMS),
    });
    expect(init.statusCode).toBe(200);
    expect(init.headers['access-control-allow-origin']).toBe(ORIGIN);
    const exposed = String(init.headers['access-control-expose-headers']).split(/,\s*/);
    expect(exposed).toEqual(
      expect.arrayContaining(['mcp-session-id', 'mcp-protocol-version', 'x-request-id']),
    );
    const denied = await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...MCP_HEADERS, origin: ORIGIN },
      payload: rpc('initialize', INIT_PARAMS),
    });
    expect(denied.statusCode).toBe(401);
    // The page can read why (its CORS headers are on the 401 too).
    expect(denied.headers['access-control-allow-origin']).toBe(ORIGIN);
    const rest = await h.app.inject({
      method: 'GET',
      url: '/weather?city=Aarhus',
      headers: { origin: ORIGIN },
    });
    expect(rest.statusCode).toBe(401);
  });

  it('allows any origin with *', async () => {
    const h = await tools({ CORS_ORIGINS: '*' });
    const res = await preflight(h, '/mcp', 'https://anywhere.example');
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
  });
});
