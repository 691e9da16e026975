import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KildeApp } from '../../src/http/app.js';
import { RpcCode } from '../../src/mcp/json-rpc.js';
import { FAKE_KEY, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { logSink } from '../helpers/app.js';
import { putMarkdown, type ServeAll, startServeAll } from '../helpers/serve-all.js';
import { INIT_PARAMS, MCP_HEADERS, messagesOf, rpc } from '../tools/harness.js';

/**
 * Per-tenant keys (API_KEYS) on `kilde serve all` with `MCP_BEARER_AUTH=true` (issue 31, "Trust"):
 * an `/mcp` tool answers a tenant key exactly where its REST twin does, and the knowledge API answers
 * another tenant's file byte for byte as it answers a file that does not exist.
 */
const MAIN = 'main-key-0123456789';
const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

let server: ServeAll;
let app: KildeApp;
let url: string;
let weather: FakeWeather;
const logs = logSink();

const put = (fileId: string, collection: string, content: string) =>
  putMarkdown(app, MAIN, fileId, collection, content);

beforeAll(async () => {
  weather = await startFakeWeather();
  server = await startServeAll(
    {
      API_KEY: MAIN,
      API_KEYS: JSON.stringify({
        [ALICE]: { collections: ['alice-kb'], name: 'alice' },
        [BOB]: { collections: ['bob-kb'], name: 'bob' },
      }),
      EMBEDDING_PROVIDER: 'none',
      MCP_SEARCH_COLLECTIONS: 'alice-kb, bob-kb',
      MCP_BEARER_AUTH: 'true',
      MCP_JSON_RESPONSE: 'true',
      WEATHER_API_BASE_URL: weather.url,
      WEATHER_API_KEY: FAKE_KEY,
      // An LLM configured, so `rewrite_concisely` is listed (serve all lists it only then); nothing
      // here calls it: a tenant's call is refused before any upstream.
      AGENT_API_BASE_URL: 'http://127.0.0.1:9/v1',
      KEEP_VERSIONS: '2',
    },
    { prefix: 'kilde-tenant-isolation-', logs, listen: true },
  );
  ({ app, url } = server);
  await put('alice-doc', 'alice-kb', '# Alice\n\nAlice keeps notes on rye bread.');
  // Bob's file has a kept version too, so a restore of it would succeed for Bob.
  await put('bob-doc', 'bob-kb', '# Bob\n\nThe first draft of the merger plan.');
  await put('bob-doc', 'bob-kb', '# Bob\n\nThe second draft of the merger plan.');
  // One file id in both tenants' collections (Bob's copy ingested last).
  await put('shared-doc', 'alice-kb', "# Shared\n\nAlice's copy of the shared file.");
  await put('shared-doc', 'bob-kb', "# Shared\n\nBob's copy of the shared file.");
});

afterAll(async () => {
  await server?.close();
  await weather?.close();
});

async function mcp(key: string, body: string) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...bearer(key) },
    body,
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    messages: messagesOf(res.headers.get('content-type'), text),
  };
}

describe('/mcp tools answer a per-tenant key as their REST twins do', () => {
  it('the REST twins refuse a tenant key with 403', async () => {
    const weatherRoute = await app.inject({
      method: 'GET',
      url: '/weather?city=Oslo',
      headers: bearer(ALICE),
    });
    expect(weatherRoute.statusCode).toBe(403);
    const echo = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: bearer(ALICE),
      payload: { text: 'x' },
    });
    expect(echo.statusCode).toBe(403);
  });

  it('tools/list offers a tenant key only the tools it may call', async () => {
    const list = async (key: string) => {
      const { status, messages } = await mcp(key, rpc('tools/list'));
      expect(status).toBe(200);
      const result = messages[0]!.result as { tools: { name: string }[] };
      return result.tools.map((t) => t.name).sort();
    };
    expect(await list(ALICE)).toEqual(['list_collections', 'search_knowledge']);
    expect(await list(MAIN)).toEqual([
      'get_weather',
      'list_collections',
      'rewrite_concisely',
      'search_knowledge',
    ]);
  });

  it('a tenant calling a main-key tool gets 403 with a JSON-RPC error, and no upstream is called', async () => {
    const before = weather.requests.length;
    for (const [id, name, args] of [
      [7, 'get_weather', { city: 'Oslo' }],
      ['call-8', 'rewrite_concisely', { text: 'A long and winding text.' }],
    ] as const) {
      const res = await mcp(
        ALICE,
        JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
      );
      expect(res.status, name).toBe(403);
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope"');
      expect(res.messages).toEqual([
        {
          jsonrpc: '2.0',
          id,
          error: {
            code: RpcCode.Forbidden,
            message: `This API key may not call ${name}: it may only use the tools that search its collections`,
          },
        },
      ]);
    }
    expect(weather.requests.length).toBe(before);
    const line = logs.lines.find((l) => l.path === '/mcp' && l.status === 403);
    expect(line).toMatchObject({ key: 'alice', tool: 'get_weather', code: 'FORBIDDEN' });
  });

  it('the main key still calls them, and a tenant still calls the knowledge tools', async () => {
    const main = await mcp(MAIN, rpc('tools/call', { name: 'get_weather', arguments: { city: 'Oslo' } }));
    expect(main.status).toBe(200);
    expect(main.messages[0]).not.toHaveProperty('error');
    const listed = await mcp(ALICE, rpc('tools/call', { name: 'list_collections', arguments: {} }));
    const text = (listed.messages[0]!.result as { content: { text: string }[] }).content[0]!.text;
    expect(JSON.parse(text).collections.map((c: { name: string }) => c.name)).toEqual(['alice-kb']);
    expect((await mcp(ALICE, rpc('initialize', INIT_PARAMS))).status).toBe(200);
  });
});

describe("another tenant's objects answer exactly like missing ones", () => {
  const send = (method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown) =>
    app.inject({
      method,
      url: path,
      headers: bearer(ALICE),
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });

  /** Alice asks for Bob's `bobId` and for a `missingId` nothing has: the same answer (`status`), ids aside. */
  async function same(
    request: (id: string) => ReturnType<typeof send>,
    bobId: string,
    missingId: string,
    status: 403 | 404,
  ) {
    const bob = await request(bobId);
    const missing = await request(missingId);
    expect(bob.statusCode, bob.body).toBe(missing.statusCode);
    expect(bob.statusCode, bob.body).toBe(status);
    expect(bob.headers['content-type']).toBe(missing.headers['content-type']);
    expect(bob.body.replaceAll(bobId, '<id>')).toBe(missing.body.replaceAll(missingId, '<id>'));
    return bob;
  }

  it("a file's versions", async () => {
    const res = await same(
      (id) => send('GET', `/api/v1/documents/${id}/versions`),
      'bob-doc',
      'no-such-doc',
      404,
    );
    // Nothing names the collection the file is in.
    expect(res.body).not.toContain('bob-kb');
    await same(
      (id) => send('GET', `/api/v1/documents/${id}/versions?collection_name=bob-kb`),
      'bob-doc',
      'no-such-doc',
      404,
    );
  });

  it('restoring a version', async () => {
    const versions = await app.inject({
      method: 'GET',
      url: '/api/v1/documents/bob-doc/versions',
      headers: bearer(BOB),
    });
    const kept = (versions.json() as { versions: { version: string; live: boolean }[] }).versions.find(
      (v) => !v.live,
    );
    expect(kept, versions.body).toBeDefined();
    const v = kept!.version;
    await same(
      (id) => send('POST', `/api/v1/documents/${id}/versions/${v}/restore`, {}),
      'bob-doc',
      'no-such-doc',
      404,
    );
    await same(
      (id) => send('POST', `/api/v1/documents/${id}/versions/${v}/restore`, { collection_name: 'bob-kb' }),
      'bob-doc',
      'no-such-doc',
      404,
    );
    // Bob's live version is unchanged.
    const after = await app.inject({
      method: 'GET',
      url: '/api/v1/documents/bob-doc/versions',
      headers: bearer(BOB),
    });
    expect(after.body).toBe(versions.body);
  });

  it("a collection's documents, a file's chunks, deleting a file and jobs", async () => {
    await same((id) => send('GET', `/api/v1/collections/${id}/documents`), 'bob-kb', 'no-such-kb', 404);
    // A tenant key may not use these routes at all: refused alike, whatever the id.
    await same((id) => send('GET', `/api/v1/documents/${id}/chunks`), 'bob-doc', 'no-such-doc', 403);
    await same((id) => send('DELETE', `/api/v1/documents/${id}`), 'bob-doc', 'no-such-doc', 403);
    await same((id) => send('GET', `/api/v1/jobs/${id}`), 'bob-doc', 'no-such-doc', 403);
  });

  it('a file id in both tenants answers each tenant with its own copy', async () => {
    const alice = await send('GET', '/api/v1/documents/shared-doc/versions');
    expect(alice.statusCode, alice.body).toBe(200);
    expect(alice.json()).toMatchObject({ file_id: 'shared-doc', collection_name: 'alice-kb' });
  });
});
