import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { AUTH, logSink } from '../helpers/app.js';
import { multipartBody } from '../ingest/helpers/harness.js';

/**
 * Per-tenant keys and Dify's External Knowledge API on `kilde serve all` (LanceDB, lexical search):
 * a key reads only its collections on every route that takes collection names, and `POST /retrieval`
 * answers Dify's request, response and error codes from the same search service as `POST /search`.
 */
const TENANT = 'dify-tenant-key-0123456789';
const OTHER = 'other-tenant-key-0123456789';
const keys = JSON.stringify({
  [TENANT]: { collections: ['kb'], name: 'dify' },
  [OTHER]: { collections: ['kb-secret'] },
});
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const DOCS: [string, string, string, string][] = [
  [
    'bread',
    'kb',
    'guides/bread.md',
    '# Rye bread\n\nDanish rye bread is made with sourdough and rests overnight.',
  ],
  [
    'tax',
    'kb',
    'guides/tax.md',
    '# Taxes\n\nIncome tax in Denmark is high; municipal and state tax are paid.',
  ],
  [
    'bikes',
    'kb',
    'notes/bikes.md',
    '# Cycling\n\nBicycle lanes in Copenhagen are wide; bread is sold at every corner.',
  ],
  ['secret', 'kb-secret', 'secret.md', '# Plans\n\nThe secret merger plan with the rye bread bakery.'],
];

let app: KildeApp;
let url: string;

async function put(key: string, fileId: string, collection: string, name: string, content: string) {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: name, collection_name: collection, user_id: 'u1' },
    { name, content, type: 'text/markdown' },
  );
  return app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...bearer(key), ...headers },
    payload: body,
  });
}

async function post(path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the assertions check the shape
  return { status: res.status, json: (await res.json()) as any };
}

const retrieval = (body: unknown, headers: Record<string, string> = AUTH) =>
  post('/retrieval', body, headers);
const ask = (query: string, extra: Record<string, unknown> = {}) => ({
  knowledge_id: 'kb',
  query,
  retrieval_setting: { top_k: 3, score_threshold: 0 },
  ...extra,
});

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kilde-tenants-'));
  const config = parseConfig(allSchema, {
    API_KEY: 'test-key',
    API_KEYS: keys,
    KILDE_DATA_DIR: dataDir,
    EMBEDDING_PROVIDER: 'none',
    CHUNK_SPLIT_BY: 'markdown',
    MCP_SEARCH_COLLECTIONS: 'kb, kb-secret',
    MCP_BEARER_AUTH: 'true',
    SMALL_COLLECTION_CHUNKS: '0',
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, logSink().stream);
  const all = await composeAll(config, log);
  app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  for (const [id, collection, name, text] of DOCS) {
    const res = await put('test-key', id, collection, name, text);
    expect(res.statusCode, res.body).toBe(200);
  }
});

afterAll(async () => {
  await app?.close();
});

describe('per-tenant keys', () => {
  it('search only their collections; the main key keeps full access', async () => {
    const search = (names: string[], key: string) =>
      post('/search', { queries: ['rye bread'], collection_names: names, k: 5 }, bearer(key));
    const mine = await search(['kb'], TENANT);
    expect(mine.status).toBe(200);
    expect(mine.json.metadatas[0].map((m: { collection_name: string }) => m.collection_name)).toContain('kb');
    for (const names of [['kb-secret'], ['kb', 'kb-secret'], ['no-such-kb']]) {
      const refused = await search(names, TENANT);
      expect(refused.status, names.join()).toBe(403);
      expect(refused.json).toMatchObject({ code: 'FORBIDDEN' });
      expect(refused.json.detail).toMatch(/This API key may not read/);
      expect(refused.json.detail).not.toMatch(/"kb"/);
    }
    expect((await search(['kb-secret'], OTHER)).status).toBe(200);
    const both = await search(['kb', 'kb-secret'], 'test-key');
    expect(
      new Set(both.json.metadatas[0].map((m: { collection_name: string }) => m.collection_name)),
    ).toEqual(new Set(['kb', 'kb-secret']));
    const wrong = await search(['kb'], 'not-a-key-at-all-0000');
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({ detail: 'Invalid API key' });
  });

  it('write only into their collections, and never reach main-key routes', async () => {
    const ok = await put(TENANT, 'tenant-note', 'kb', 'tenant.md', '# Tenant\n\nA note the tenant wrote.');
    expect(ok.statusCode, ok.body).toBe(200);
    const refused = await put(TENANT, 'intrusion', 'kb-secret', 'x.md', '# X\n\nInjected text.');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ status: false, code: 'FORBIDDEN' });
    for (const [method, path] of [
      ['GET', '/metrics'],
      ['DELETE', '/api/v1/documents/secret'],
      ['GET', '/api/v1/eval/runs'],
    ] as const) {
      const res = await app.inject({ method, url: path, headers: bearer(TENANT) });
      expect(res.statusCode, path).toBe(403);
    }
    const evalRefused = await app.inject({
      method: 'POST',
      url: '/api/v1/eval',
      headers: bearer(TENANT),
      payload: {
        collection_names: ['kb-secret'],
        queries: [{ id: 'q1', text: 'plan' }],
        qrels: { q1: { secret: 1 } },
      },
    });
    expect(evalRefused.statusCode).toBe(403);
    // The secret collection is unchanged.
    const still = await post('/search', { queries: ['injected'], collection_names: ['kb-secret'] }, AUTH);
    expect(still.json.documents[0].join(' ')).not.toMatch(/Injected/);
  });

  it('list, read and restore only their collections through the knowledge API', async () => {
    const get = (key: string, path: string) => app.inject({ method: 'GET', url: path, headers: bearer(key) });
    const mine = await get(TENANT, '/api/v1/collections');
    expect(mine.statusCode, mine.body).toBe(200);
    expect(mine.json().collections.map((c: { name: string }) => c.name)).toEqual(['kb']);
    const all = await get('test-key', '/api/v1/collections');
    expect(
      all
        .json()
        .collections.map((c: { name: string }) => c.name)
        .sort(),
    ).toEqual(['kb', 'kb-secret']);
    const docs = await get(TENANT, '/api/v1/collections/kb/documents');
    expect(docs.statusCode).toBe(200);
    expect(docs.json().documents.map((d: { file_id: string }) => d.file_id)).toContain('bread');
    // Another tenant's collection and file answer as if they did not exist.
    expect((await get(TENANT, '/api/v1/collections/kb-secret/documents')).statusCode).toBe(404);
    expect((await get(TENANT, '/api/v1/documents/secret/versions')).statusCode).toBe(404);
    const restore = await app.inject({
      method: 'POST',
      url: '/api/v1/documents/secret/versions/any/restore',
      headers: bearer(TENANT),
      payload: {},
    });
    expect(restore.statusCode).toBe(404);
    expect((await get(OTHER, '/api/v1/documents/secret/versions')).statusCode).toBe(200);
  });

  it('see only their collections over MCP', async () => {
    const connect = async (key: string) => {
      const client = new Client({ name: 'tenant-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: bearer(key) } }),
      );
      return client;
    };
    const client = await connect(TENANT);
    try {
      const listed = await client.callTool({ name: 'list_collections', arguments: {} });
      const { collections } = JSON.parse((listed.content as { text: string }[])[0]!.text);
      expect(collections.map((c: { name: string }) => c.name)).toEqual(['kb']);
      const err = await client
        .callTool({
          name: 'search_knowledge',
          arguments: { query: 'merger plan', collection_names: ['kb-secret'] },
        })
        .catch((e: unknown) => e);
      expect((err as McpError).code).toBe(-32602);
      const hits = await client.callTool({
        name: 'search_knowledge',
        arguments: { query: 'rye bread bakery' },
      });
      const { results } = JSON.parse((hits.content as { text: string }[])[0]!.text);
      expect(results.length).toBeGreaterThan(0);
      for (const r of results) expect(r.collection).toBe('kb');
    } finally {
      await client.close();
    }
    const admin = await connect('test-key');
    try {
      const listed = await admin.callTool({ name: 'list_collections', arguments: {} });
      const names = JSON.parse((listed.content as { text: string }[])[0]!.text).collections.map(
        (c: { name: string }) => c.name,
      );
      expect(names).toEqual(['kb', 'kb-secret']);
    } finally {
      await admin.close();
    }
  });

  it('refuses a bad key file at start-up with a clear message that never shows a key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kilde-keys-'));
    const file = join(dir, 'keys.json');
    const build = (env: Record<string, string>) =>
      buildApp(parseConfig(allSchema, { API_KEY: 'test-key', ...env }), {
        logger: createLogger({ DEBUG: false, LOG_LEVEL_APP: 'error' }, logSink().stream),
        parts: [],
      });
    writeFileSync(file, JSON.stringify({ 'short-secret': { collections: ['kb'] } }));
    const err = await build({ API_KEYS_FILE: file }).catch((e: Error) => e);
    expect(String(err)).toMatch(/API_KEYS_FILE \(entry 1\): a key must have at least 16 characters/);
    expect(String(err)).not.toMatch(/short-secret/);
    writeFileSync(file, '{not json');
    expect(String(await build({ API_KEYS_FILE: file }).catch((e: Error) => e))).toMatch(
      /API_KEYS_FILE is not valid JSON/,
    );
    expect(String(await build({ API_KEYS_FILE: join(dir, 'missing.json') }).catch((e: Error) => e))).toMatch(
      /API_KEYS_FILE cannot be read/,
    );
    const dup = JSON.stringify({ 'test-key-test-key-1': { collections: ['kb'] } });
    expect(
      String(await build({ API_KEYS: dup, API_KEY: 'test-key-test-key-1' }).catch((e: Error) => e)),
    ).toMatch(/repeats API_KEY/);
    writeFileSync(file, JSON.stringify({ [TENANT]: { collections: ['kb'], name: 'ok' } }));
    const ok = await build({ API_KEYS_FILE: file });
    await ok.close();
  });
});

describe('GET /api/v1/info', () => {
  it('says what the mounted parts offer', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/info', headers: bearer(TENANT) });
    expect(res.statusCode).toBe(200);
    const info = res.json();
    expect(info.services).toEqual(expect.arrayContaining(['ingest', 'retrieve']));
    expect(info.search).toEqual({
      modes_available: { hybrid: false, rerank: false, agentic: false },
      default_k: 5,
      max_k: 100,
    });
    expect(info.ingest.engines).toEqual(['inprocess']);
    expect(info.ingest.max_upload_bytes).toBeGreaterThan(0);
    expect(info.keep_versions).toBe(0);
    expect(typeof info.version).toBe('string');
    expect((await app.inject({ method: 'GET', url: '/api/v1/info' })).statusCode).toBe(401);
  });
});

describe('POST /retrieval (Dify External Knowledge API)', () => {
  it('answers records {content, score, title, metadata} ranked as POST /search ranks them', async () => {
    const { status, json } = await retrieval(ask('rye bread sourdough'));
    expect(status).toBe(200);
    expect(Object.keys(json)).toEqual(['records']);
    const search = await post(
      '/search',
      { queries: ['rye bread sourdough'], collection_names: ['kb'], k: 3 },
      AUTH,
    );
    expect(json.records.map((r: { content: string }) => r.content)).toEqual(search.json.documents[0]);
    expect(json.records.map((r: { score: number }) => r.score)).toEqual(search.json.distances[0]);
    expect(json.records[0]).toMatchObject({
      title: 'Rye bread',
      metadata: { file_id: 'bread', name: 'guides/bread.md' },
    });
    for (const r of json.records) {
      expect(r.score).toBeGreaterThanOrEqual(0);
      expect(r.score).toBeLessThanOrEqual(1);
      expect(r.metadata).toBeTypeOf('object');
      expect(r.metadata).not.toBeNull();
      expect(Object.keys(r)).toEqual(['content', 'score', 'title', 'metadata']);
    }
    expect(json.records.length).toBeLessThanOrEqual(3);
  });

  it('applies top_k and score_threshold, and answers {"records": []} when nothing passes', async () => {
    const all = await retrieval(ask('bread', { retrieval_setting: { top_k: 10, score_threshold: 0 } }));
    expect(all.json.records.length).toBeGreaterThanOrEqual(2);
    const top = all.json.records[0].score;
    const high = await retrieval(ask('bread', { retrieval_setting: { top_k: 10, score_threshold: top } }));
    expect(high.json.records.every((r: { score: number }) => r.score >= top)).toBe(true);
    expect(high.json.records.length).toBeLessThan(all.json.records.length);
    const one = await retrieval(ask('bread', { retrieval_setting: { top_k: 1, score_threshold: 0 } }));
    expect(one.json.records).toHaveLength(1);
    const none = await retrieval(ask('bread', { retrieval_setting: { top_k: 3, score_threshold: 1 } }));
    expect(none).toEqual({ status: 200, json: { records: [] } });
  });

  it('maps metadata_condition onto the filter and the hits, and refuses only what Dify never sends', async () => {
    const cond = (conditions: unknown[], logical_operator = 'and') =>
      retrieval(
        ask('bread', {
          retrieval_setting: { top_k: 10, score_threshold: 0 },
          metadata_condition: { logical_operator, conditions },
        }),
      );
    const files = (json: { records: { metadata: { file_id: string } }[] }) =>
      json.records.map((r) => r.metadata.file_id).sort();
    expect(
      files((await cond([{ name: 'file_id', comparison_operator: 'is', value: 'bikes' }])).json),
    ).toEqual(['bikes']);
    expect(
      files((await cond([{ name: ['source'], comparison_operator: 'start with', value: 'guides/' }])).json),
    ).toEqual(['bread']);
    expect(
      files(
        (
          await cond([
            { name: 'file_id', comparison_operator: 'in', value: ['bread', 'secret', "x' OR 1=1"] },
          ])
        ).json,
      ),
    ).toEqual(['bread']);
    // What the index filter cannot express is checked on the hits, with Dify's operators.
    expect(
      files((await cond([{ name: 'source', comparison_operator: 'contains', value: 'bread' }])).json),
    ).toEqual(['bread']);
    expect(
      files(
        (await cond([{ name: 'document_name', comparison_operator: 'end with', value: 'bikes.md' }])).json,
      ),
    ).toEqual(['bikes']);
    expect(files((await cond([{ name: 'author', comparison_operator: 'is', value: 'x' }])).json)).toEqual([]);
    for (const [conditions, message] of [
      [[{ name: 'file_id', comparison_operator: 'like', value: 'x' }], /unknown comparison_operator "like"/],
      [
        [{ name: 'created_at', comparison_operator: 'after', value: 'soon' }],
        /created_at needs an ISO 8601 date/,
      ],
    ] as const) {
      const res = await cond([...conditions]);
      expect(res.status).toBe(400);
      expect(res.json.error_code).toBe(400);
      expect(res.json.error_msg).toMatch(message);
    }
    // `or` (Dify's automatic filtering): the hits of each condition, united.
    const or = await cond(
      [
        { name: 'file_id', comparison_operator: 'is', value: 'bread' },
        { name: 'file_id', comparison_operator: 'is', value: 'bikes' },
      ],
      'or',
    );
    expect(or.status).toBe(200);
    expect(files(or.json)).toEqual(['bikes', 'bread']);
  });

  it("answers Dify's error codes: 1001, 1002, 2001 (a tenant never learns another's knowledge base)", async () => {
    const body = ask('rye bread');
    for (const headers of [{}, { authorization: 'Basic dGVzdA==' }, { authorization: 'Bearer' }]) {
      const res = await retrieval(body, headers);
      expect(res.status).toBe(403);
      expect(res.json.error_code).toBe(1001);
      expect(res.json.error_msg).toMatch(/Invalid Authorization header format/);
    }
    const wrong = await retrieval(body, bearer('nobody-knows-this-key'));
    expect(wrong).toEqual({ status: 403, json: { error_code: 1002, error_msg: 'Authorization failed' } });
    const missing = { status: 404, json: { error_code: 2001, error_msg: 'The knowledge does not exist' } };
    expect(await retrieval({ ...body, knowledge_id: 'no-such-kb' })).toEqual(missing);
    expect(await retrieval({ ...body, knowledge_id: "kb' OR 1=1" })).toEqual(missing);
    // The tenant key may read kb, not kb-secret (which exists): the same answer as a missing one.
    expect(await retrieval({ ...body, knowledge_id: 'kb-secret' }, bearer(TENANT))).toEqual(missing);
    expect((await retrieval(body, bearer(TENANT))).status).toBe(200);
    expect((await retrieval({ ...body, knowledge_id: 'kb-secret' }, bearer(OTHER))).status).toBe(200);
    const malformed = await retrieval({ knowledge_id: 'kb', query: 'x' });
    expect(malformed.status).toBe(422);
    expect(malformed.json.error_code).toBe(422);
    expect(malformed.json.error_msg).toMatch(/retrieval_setting/);
  });
});
