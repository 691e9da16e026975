import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/parse.js';
import type { KildeApp } from '../../src/http/app.js';
import { loadUserAccess } from '../../src/http/user-access.js';
import { logSink } from '../helpers/app.js';
import { putMarkdown, type ServeAll, startServeAll } from '../helpers/serve-all.js';
import { MCP_HEADERS, messagesOf, rpc } from '../tools/harness.js';

/**
 * Per-user access through Open WebUI's forwarded headers (USER_ACCESS_FILE): two users of one Open
 * WebUI, in different groups, calling through the one key Open WebUI holds. Headers are sent as Open
 * WebUI 0.12 sends them: `X-OpenWebUI-User-Id` / `-Email` / `-Name` / `-Role` with
 * ENABLE_FORWARD_USER_INFO_HEADERS, and the connection's header templates `{{USER_GROUPS}}` (names
 * joined by ",", each value URL-quoted with punctuation and spaces kept).
 */
const MAIN = 'main-key-0123456789';
const OWUI = 'open-webui-key-0123456789';
const OTHER = 'other-key-0123456789';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const ALICE = {
  'x-openwebui-user-name': 'Alice',
  'x-openwebui-user-id': '3b1f0c2e-alice',
  'x-openwebui-user-email': 'alice@example.com',
  'x-openwebui-user-role': 'user',
  'x-openwebui-user-groups': 'Engineering',
};
const BOB = {
  'x-openwebui-user-name': 'Bob',
  'x-openwebui-user-id': '9d8e7f6a-bob',
  'x-openwebui-user-email': 'Bob@Example.com',
  'x-openwebui-user-role': 'user',
  // `quote('Salg & Marked', safe=punctuation + ' ')` and a second group, as {{USER_GROUPS}} joins them.
  'x-openwebui-user-groups': 'Salg & Marked,Fl%C3%B8jte',
};

let server: ServeAll;
let app: KildeApp;
let url: string;
let dir: string;
const logs = logSink();

const put = (fileId: string, collection: string, content: string) =>
  putMarkdown(app, MAIN, fileId, collection, content);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kilde-user-access-'));
  const accessFile = join(dir, 'user-access.yaml');
  writeFileSync(
    accessFile,
    [
      'trusted_keys: [open-webui]',
      'groups:',
      '  Engineering: [eng-docs]',
      '  "Salg & Marked": [sales-docs]',
      '  Fløjte: [music-docs]',
      'users:',
      '  bob@example.com: [bob-notes]',
      '',
    ].join('\n'),
  );
  server = await startServeAll(
    {
      API_KEY: MAIN,
      API_KEYS: JSON.stringify({
        [OWUI]: { collections: ['eng-docs', 'sales-docs', 'bob-notes', 'shared'], name: 'open-webui' },
        [OTHER]: { collections: ['eng-docs', 'sales-docs'], name: 'other' },
      }),
      USER_ACCESS_FILE: accessFile,
      EMBEDDING_PROVIDER: 'none',
      MCP_SEARCH_COLLECTIONS: 'eng-docs, sales-docs, bob-notes, music-docs, shared',
      MCP_BEARER_AUTH: 'true',
      MCP_JSON_RESPONSE: 'true',
    },
    { prefix: 'kilde-user-access-', logs, listen: true },
  );
  ({ app, url } = server);
  // The same words in every collection, so only the collection filter keeps users apart.
  await put('eng-1', 'eng-docs', '# Engineering\n\nThe quarterly budget plan for the platform team.');
  await put('eng-2', 'eng-docs', '# Engineering\n\nBudget plan: servers and the build farm.');
  await put('sales-1', 'sales-docs', '# Sales\n\nThe quarterly budget plan for the sales team.');
  await put('bob-1', 'bob-notes', "# Bob's notes\n\nMy own budget plan draft.");
  await put('music-1', 'music-docs', '# Music\n\nThe budget plan for new flutes.');
  await put('shared-1', 'shared', '# Shared\n\nThe company-wide budget plan.');
});

afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Meta = { collection_name: string };

async function search(key: string, headers: Record<string, string>, collections: string[]) {
  return app.inject({
    method: 'POST',
    url: '/search',
    headers: { ...bearer(key), ...headers },
    payload: { queries: ['budget plan'], collection_names: collections, k: 20 },
  });
}

async function mcpSearch(key: string, headers: Record<string, string>, args: Record<string, unknown> = {}) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...bearer(key), ...headers },
    body: rpc('tools/call', {
      name: 'search_knowledge',
      arguments: { query: 'budget plan', k: 20, ...args },
    }),
  });
  expect(res.status).toBe(200);
  const [message] = messagesOf(res.headers.get('content-type'), await res.text());
  const result = message!.result as { content: { text: string }[] } | undefined;
  // A collection the caller may not search is an invalid argument (a JSON-RPC error).
  return { content: result?.content ?? [], error: message!.error as { message: string } | undefined };
}

const collectionsOf = (text: string) =>
  (JSON.parse(text) as { results: { collection: string }[] }).results.map((r) => r.collection);

describe('per-user access through Open WebUI headers (USER_ACCESS_FILE)', () => {
  it('POST /search: two users of one key, 0 cross-user hits', async () => {
    // Each asks for every collection the key allows; a user may not read the other's.
    const alice = await search(OWUI, ALICE, ['eng-docs']);
    expect(alice.statusCode).toBe(200);
    const aliceHits = (alice.json().metadatas[0] as Meta[]).map((m) => m.collection_name);
    expect(aliceHits.length).toBe(2);
    expect(new Set(aliceHits)).toEqual(new Set(['eng-docs']));

    const bob = await search(OWUI, BOB, ['sales-docs', 'bob-notes']);
    expect(bob.statusCode).toBe(200);
    const bobHits = (bob.json().metadatas[0] as Meta[]).map((m) => m.collection_name);
    expect(new Set(bobHits)).toEqual(new Set(['sales-docs', 'bob-notes']));

    // Asking for the other user's collection is refused as a key's foreign collection is.
    const crossed = await search(OWUI, ALICE, ['eng-docs', 'sales-docs']);
    expect(crossed.statusCode).toBe(403);
    expect(crossed.json()).toEqual({ detail: 'This user may not read "sales-docs"', code: 'FORBIDDEN' });
    expect((await search(OWUI, BOB, ['eng-docs'])).statusCode).toBe(403);
    // A group mapped to a collection the key does not allow gives nothing more.
    expect((await search(OWUI, BOB, ['music-docs'])).statusCode).toBe(403);
  });

  it('/mcp search_knowledge: each user finds only their collections, list_collections lists only them', async () => {
    const alice = await mcpSearch(OWUI, ALICE);
    expect(alice.error).toBeUndefined();
    expect(new Set(collectionsOf(alice.content[0]!.text))).toEqual(new Set(['eng-docs']));
    const bob = await mcpSearch(OWUI, BOB);
    const bobCollections = collectionsOf(bob.content[0]!.text);
    expect(bobCollections.length).toBeGreaterThan(0);
    expect(bobCollections.filter((c) => c === 'eng-docs')).toEqual([]);
    expect(new Set(bobCollections)).toEqual(new Set(['sales-docs', 'bob-notes']));

    const refused = await mcpSearch(OWUI, ALICE, { collection_names: ['sales-docs'] });
    expect(refused.error?.message).toContain('Not searchable here: "sales-docs"');

    const listed = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, ...bearer(OWUI), ...BOB },
      body: rpc('tools/call', { name: 'list_collections', arguments: {} }),
    });
    const [message] = messagesOf(listed.headers.get('content-type'), await listed.text());
    const text = (message!.result as { content: { text: string }[] }).content[0]!.text;
    expect((JSON.parse(text) as { collections: { name: string }[] }).collections.map((c) => c.name)).toEqual([
      'sales-docs',
      'bob-notes',
    ]);
  });

  it('a user in no mapped group reads nothing; a request without user headers reads what the key allows', async () => {
    const stranger = { 'x-openwebui-user-id': 'someone-else', 'x-openwebui-user-groups': '' };
    expect((await search(OWUI, stranger, ['eng-docs'])).statusCode).toBe(403);
    const nothing = await mcpSearch(OWUI, stranger);
    expect(nothing.error?.message).toBe('No knowledge base is searchable with this key');

    const plain = await search(OWUI, {}, ['eng-docs', 'sales-docs', 'bob-notes', 'shared']);
    expect(plain.statusCode).toBe(200);
    expect(new Set((plain.json().metadatas[0] as Meta[]).map((m) => m.collection_name))).toEqual(
      new Set(['eng-docs', 'sales-docs', 'bob-notes', 'shared']),
    );
  });

  it('headers from a key not trusted to forward them are ignored: the key alone decides', async () => {
    const spoofed = await search(OTHER, { ...ALICE, 'x-openwebui-user-groups': 'Salg & Marked' }, [
      'eng-docs',
      'sales-docs',
    ]);
    expect(spoofed.statusCode).toBe(200);
    expect(new Set((spoofed.json().metadatas[0] as Meta[]).map((m) => m.collection_name))).toEqual(
      new Set(['eng-docs', 'sales-docs']),
    );
    // ...and never widen a key: a forwarded user cannot reach past it either.
    expect((await search(OTHER, BOB, ['bob-notes'])).statusCode).toBe(403);
  });
});

describe('USER_ACCESS configuration', () => {
  const tenants = [{ key: OWUI, name: 'open-webui', collections: ['a'] }];
  it('reads JSON and YAML, and refuses a trusted key that is not configured', () => {
    const json = loadUserAccess(
      { USER_ACCESS: '{"trusted_keys": ["API_KEY"], "groups": {"g": ["a"]}, "require_user": true}' },
      tenants,
    );
    expect(json?.requireUser).toBe(true);
    expect(json?.trustedKeys.has('API_KEY')).toBe(true);
    expect(() => loadUserAccess({ USER_ACCESS: 'trusted_keys: [nobody]' }, tenants)).toThrow(ConfigError);
    expect(() =>
      loadUserAccess({ USER_ACCESS: 'trusted_keys: [open-webui]\ngroups: {g: ["bad name!"]}' }, tenants),
    ).toThrow(ConfigError);
    expect(() =>
      loadUserAccess({ USER_ACCESS: 'trusted_keys: [open-webui]', USER_ACCESS_FILE: '/x' }, tenants),
    ).toThrow(ConfigError);
    expect(loadUserAccess({}, tenants)).toBeUndefined();
  });
});
