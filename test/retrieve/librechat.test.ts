import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allService, findService } from '../../src/cli/services.js';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import type { VectorIndex } from '../../src/index/store.js';
import { AUTH, logSink } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { multipartBody } from '../ingest/helpers/harness.js';

/**
 * LibreChat's RAG API contract (docs/librechat.md) on `kilde serve all` (LanceDB, lexical search):
 * every request is built byte for byte as LibreChat builds it (its `generateShortLivedToken` JWT,
 * the `form-data` body of `uploadVectors`, axios' JSON bodies of `file_search`, the context handlers
 * and `deleteRagFile`), and every answer is read the way LibreChat reads it.
 */
const SECRET = 'librechat-jwt-secret-0123456789abcdef';
const ALICE = '6650f1c2a9b3c4d5e6f70811';
const BOB = '6650f1c2a9b3c4d5e6f70822';
const AGENT = 'agent_Xk2-9fQz_TmR';

const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url');

/** What `jwt.sign({ id }, JWT_SECRET, { expiresIn: '5m', algorithm: 'HS256' })` gives at `nowMs`. */
function libreChatJwt(id: string, nowMs: number, secret = SECRET, payload?: Record<string, unknown>): string {
  const iat = Math.floor(nowMs / 1000);
  const head = b64url('{"alg":"HS256","typ":"JWT"}');
  const body = b64url(JSON.stringify(payload ?? { id, iat, exp: iat + 300 }));
  const sig = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

/**
 * The body `form-data` writes for `formData.append('file_id', …); formData.append('file',
 * fs.createReadStream(path)); formData.append('entity_id', …)` (form-data 4, checked byte for byte):
 * its boundary (26 dashes and 24 hex digits), a part per field, the file part named by the path's
 * base name with the type looked up from its extension.
 */
function formDataBody(fields: [string, string | { name: string; type: string; content: Buffer | string }][]) {
  const boundary = `--------------------------${randomBytes(12).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const [name, value] of fields) {
    if (typeof value === 'string') {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`));
      chunks.push(Buffer.from(value), Buffer.from('\r\n'));
    } else {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${value.name}"\r\nContent-Type: ${value.type}\r\n\r\n`,
        ),
        Buffer.isBuffer(value.content) ? value.content : Buffer.from(value.content),
        Buffer.from('\r\n'),
      );
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

const newDir = tempDirs('kilde-librechat-');
const clock = new ManualClock();
let app: KildeApp;
let index: VectorIndex;

const bearer = (id: string) => ({ authorization: `Bearer ${libreChatJwt(id, clock.now())}` });

/** LibreChat's `uploadVectors`. */
async function embed(
  user: string,
  fileId: string,
  name: string,
  content: string | Buffer,
  entityId?: string,
) {
  const type = name.endsWith('.md')
    ? 'text/markdown'
    : name.endsWith('.txt')
      ? 'text/plain'
      : 'application/octet-stream';
  const { body, contentType } = formDataBody([
    ['file_id', fileId],
    ['file', { name, type, content }],
    ...(entityId ? ([['entity_id', entityId]] as [string, string][]) : []),
  ]);
  return app.inject({
    method: 'POST',
    url: '/embed',
    headers: { ...bearer(user), accept: 'application/json', 'content-type': contentType },
    payload: body,
  });
}

/** LibreChat's `file_search` tool and context handlers: axios posting JSON. */
function postJson(user: string, url: string, body: unknown, headers = bearer(user)) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

type Hit = [{ id: null; page_content: string; metadata: Record<string, unknown>; type: string }, number];

/** How `file_search` turns an answer into sources. */
function asLibreChatSources(hits: Hit[]) {
  return hits.map(([docInfo, distance]) => ({
    filename: String(docInfo.metadata.source).split('/').pop(),
    content: docInfo.page_content,
    relevance: 1.0 - distance,
    page: docInfo.metadata.page || null,
  }));
}

beforeAll(async () => {
  const config = parseConfig(allSchema, {
    API_KEY: 'test-key',
    KILDE_DATA_DIR: await newDir(),
    EMBEDDING_PROVIDER: 'none',
    CHUNK_SPLIT_BY: 'markdown',
    SMALL_COLLECTION_CHUNKS: '0',
    LIBRECHAT_JWT_SECRET: SECRET,
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log, { clock });
  index = all.index;
  app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  const uploads: [string, string, string, string, string?][] = [
    [
      ALICE,
      'f-alice-bread',
      'rye bread.md',
      '# Rye bread\n\nDanish rye bread rests overnight with sourdough.',
    ],
    [ALICE, 'f-alice-tax', 'tax.md', '# Taxes\n\nIncome tax in Denmark is paid to the municipality.'],
    [BOB, 'f-bob-bread', 'bob.md', '# Secret\n\nBob keeps a secret rye bread recipe with caraway.'],
    [
      ALICE,
      'f-agent-bikes',
      'bikes.md',
      '# Cycling\n\nBicycle lanes and rye bread bakeries line the streets.',
      AGENT,
    ],
  ];
  for (const [user, id, name, text, entity] of uploads) {
    const res = await embed(user, id, name, text, entity);
    expect(res.statusCode, res.body).toBe(200);
  }
});

afterAll(async () => {
  await app?.close();
});

describe('POST /embed', () => {
  it("answers what uploadVectors checks and writes the file into its owner's collection", async () => {
    const res = await embed(ALICE, 'f-alice-notes', 'notes.txt', 'Notes about rye bread and butter.');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: true,
      message: 'File processed successfully.',
      file_id: 'f-alice-notes',
      filename: 'notes.txt',
      known_type: true,
    });
    const page = await index.scroll({ fileId: 'f-alice-notes', chunksOnly: true }, { limit: 10 });
    expect(page.points.length).toBeGreaterThan(0);
    for (const p of page.points)
      expect(p.meta).toMatchObject({
        collection_name: `librechat_${ALICE}`,
        collection_type: 'librechat',
        user_id: ALICE,
        source: 'notes.txt',
      });
    const agent = await index.scroll({ fileId: 'f-agent-bikes', chunksOnly: true }, { limit: 10 });
    expect(new Set(agent.points.map((p) => p.meta.collection_name))).toEqual(new Set([`librechat_${AGENT}`]));
  });

  it('takes a file larger than a JSON body (the upload limit is MAX_UPLOAD_BYTES)', async () => {
    const big = 'Rye bread and butter on a cold morning. '.repeat(8000);
    const res = await embed(BOB, 'f-bob-big', 'big.txt', big);
    expect(res.statusCode, res.body).toBe(200);
    expect(await index.count({ fileId: 'f-bob-big', chunksOnly: true })).toBeGreaterThan(1);
  });

  it('answers known_type false for a type Kilde cannot read, which LibreChat reports as unsupported', async () => {
    const res = await embed(ALICE, 'f-blob', 'blob.bin', Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0, 7, 9]));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: false,
      known_type: false,
      file_id: 'f-blob',
      filename: 'blob.bin',
    });
    expect(await index.count({ fileId: 'f-blob' })).toBe(0);
  });

  it('refuses a form without file_id (422) and a request without a file (400)', async () => {
    const noId = formDataBody([['file', { name: 'a.txt', type: 'text/plain', content: 'x' }]]);
    const res = await app.inject({
      method: 'POST',
      url: '/embed',
      headers: { ...bearer(ALICE), 'content-type': noId.contentType },
      payload: noId.body,
    });
    expect(res.statusCode).toBe(422);
    const noFile = formDataBody([['file_id', 'f-x']]);
    const res2 = await app.inject({
      method: 'POST',
      url: '/embed',
      headers: { ...bearer(ALICE), 'content-type': noFile.contentType },
      payload: noFile.body,
    });
    expect(res2.statusCode).toBe(400);
    expect(res2.json()).toMatchObject({ code: 'INVALID_REQUEST' });
  });
});

describe('POST /query', () => {
  it("answers [[document, distance]] that file_search parses, from the user's own file", async () => {
    const res = await postJson(ALICE, '/query', {
      file_id: 'f-alice-bread',
      query: 'rye bread sourdough',
      k: 5,
    });
    expect(res.statusCode, res.body).toBe(200);
    const hits = res.json() as Hit[];
    expect(hits.length).toBeGreaterThan(0);
    for (const [doc, distance] of hits) {
      expect(Object.keys(doc)).toEqual(['id', 'metadata', 'page_content', 'type']);
      expect(doc.type).toBe('Document');
      expect(doc.metadata).toMatchObject({
        file_id: 'f-alice-bread',
        user_id: ALICE,
        source: 'rye bread.md',
      });
      expect(doc.metadata.digest).toMatch(/^[0-9a-f]{32}$/);
      expect(distance).toBeGreaterThanOrEqual(0);
      expect(distance).toBeLessThanOrEqual(1);
    }
    const sources = asLibreChatSources(hits);
    expect(sources[0]).toMatchObject({ filename: 'rye bread.md', page: null });
    expect(sources[0]?.content).toContain('Danish rye bread');
    // Best first: ascending distance, as pgvector orders.
    const distances = hits.map((h) => h[1]);
    expect([...distances].sort((a, b) => a - b)).toEqual(distances);
  });

  it("never answers another user's file, and an agent's files only with its entity_id", async () => {
    const bobsFile = await postJson(ALICE, '/query', {
      file_id: 'f-bob-bread',
      query: 'secret rye bread',
      k: 5,
    });
    expect(bobsFile.statusCode).toBe(200);
    expect(bobsFile.json()).toEqual([]);
    const agentWithout = await postJson(BOB, '/query', {
      file_id: 'f-agent-bikes',
      query: 'bicycle lanes',
      k: 5,
    });
    expect(agentWithout.json()).toEqual([]);
    const agentWith = await postJson(BOB, '/query', {
      file_id: 'f-agent-bikes',
      query: 'bicycle lanes',
      k: 5,
      entity_id: AGENT,
    });
    const hits = agentWith.json() as Hit[];
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every(([d]) => d.metadata.user_id === AGENT)).toBe(true);
    // entity_id widens to the agent's collection, never to another user's.
    const viaAgent = await postJson(BOB, '/query', {
      file_id: 'f-alice-bread',
      query: 'rye bread',
      k: 5,
      entity_id: AGENT,
    });
    expect(viaAgent.json()).toEqual([]);
  });

  it('reads rag_api defaults: k = 4 when absent', async () => {
    const res = await postJson(ALICE, '/query', { file_id: 'f-alice-bread', query: 'bread' });
    expect(res.statusCode).toBe(200);
    expect((res.json() as Hit[]).length).toBeLessThanOrEqual(4);
  });
});

describe('POST /query_multiple', () => {
  it("answers hits of the caller's files only; 404 when none", async () => {
    const res = await postJson(ALICE, '/query_multiple', {
      file_ids: ['f-alice-bread', 'f-bob-bread', 'f-alice-tax'],
      query: 'rye bread',
      k: 10,
    });
    expect(res.statusCode).toBe(200);
    const files = new Set((res.json() as Hit[]).map(([d]) => d.metadata.file_id));
    expect(files.has('f-alice-bread')).toBe(true);
    expect(files.has('f-bob-bread')).toBe(false);
    const none = await postJson(ALICE, '/query_multiple', {
      file_ids: ['f-bob-bread'],
      query: 'rye bread',
      k: 4,
    });
    expect(none.statusCode).toBe(404);
    expect(none.json()).toMatchObject({ detail: 'No documents found for the given query' });
    const empty = await postJson(ALICE, '/query_multiple', { file_ids: [], query: 'rye bread', k: 4 });
    expect(empty.statusCode).toBe(404);
  });
});

describe('GET /documents/{id}/context and the listings', () => {
  it('answers the whole file as one JSON string, to its owner only', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/documents/f-alice-tax/context',
      headers: bearer(ALICE),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const text = res.json() as string;
    expect(typeof text).toBe('string');
    expect(text.split('\n')[0]).toBe('tax.md');
    expect(text).toContain('Income tax in Denmark is paid to the municipality.');
    const bob = await app.inject({
      method: 'GET',
      url: '/documents/f-alice-tax/context',
      headers: bearer(BOB),
    });
    expect(bob.statusCode).toBe(404);
    expect(bob.json()).toMatchObject({ detail: 'The specified file_id was not found' });
  });

  it("GET /ids and GET /documents?ids= list the caller's files only", async () => {
    const ids = await app.inject({ method: 'GET', url: '/ids', headers: bearer(BOB) });
    expect(new Set(ids.json() as string[])).toEqual(new Set(['f-bob-bread', 'f-bob-big']));
    const docs = await app.inject({
      method: 'GET',
      url: '/documents?ids=f-alice-bread&ids=f-alice-tax',
      headers: bearer(ALICE),
    });
    expect(docs.statusCode).toBe(200);
    const files = (docs.json() as { page_content: string; metadata: { file_id: string } }[]).map(
      (d) => d.metadata.file_id,
    );
    expect(new Set(files)).toEqual(new Set(['f-alice-bread', 'f-alice-tax']));
    const other = await app.inject({
      method: 'GET',
      url: '/documents?ids=f-bob-bread',
      headers: bearer(ALICE),
    });
    expect(other.statusCode).toBe(404);
  });
});

describe('POST /text', () => {
  it('answers the extracted text, writing nothing', async () => {
    const { body, contentType } = formDataBody([
      ['file_id', 'f-text'],
      ['file', { name: 'plain.txt', type: 'text/plain', content: 'Just some words to read.' }],
    ]);
    const res = await app.inject({
      method: 'POST',
      url: '/text',
      headers: { ...bearer(ALICE), accept: 'application/json', 'content-type': contentType },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ file_id: 'f-text', filename: 'plain.txt', known_type: true });
    expect((res.json() as { text: string }).text).toContain('Just some words to read.');
    expect(await index.count({ fileId: 'f-text' })).toBe(0);
  });
});

describe('DELETE /documents', () => {
  it("deletes LibreChat's files, answers 404 for the missing, and never touches another tenant's", async () => {
    // A file of another tenant under an id LibreChat could name.
    const { body, headers } = multipartBody(
      { file_id: 'f-shared-id', filename: 'kb.md', collection_name: 'kb', user_id: 'u1' },
      { name: 'kb.md', content: '# KB\n\nA knowledge base page.', type: 'text/markdown' },
    );
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(put.statusCode, put.body).toBe(200);
    await embed(ALICE, 'f-delete-me', 'old.txt', 'A file to delete.');
    expect(await index.count({ fileId: 'f-delete-me' })).toBeGreaterThan(0);

    const del = (ids: string[]) =>
      app.inject({
        method: 'DELETE',
        url: '/documents',
        headers: { ...bearer(ALICE), 'content-type': 'application/json', accept: 'application/json' },
        payload: JSON.stringify(ids),
      });
    const res = await del(['f-delete-me']);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ message: 'Documents for 1 file deleted successfully' });
    expect(await index.count({ fileId: 'f-delete-me' })).toBe(0);
    const again = await del(['f-delete-me']);
    expect(again.statusCode).toBe(404);
    expect(again.json()).toMatchObject({ detail: 'One or more IDs not found' });
    const foreign = await del(['f-shared-id']);
    expect(foreign.statusCode).toBe(404);
    expect(await index.count({ fileId: 'f-shared-id', chunksOnly: true })).toBeGreaterThan(0);
  });
});

describe('authentication', () => {
  const query = { file_id: 'f-alice-bread', query: 'rye bread', k: 5 };

  it('answers /health without a token (parseText checks it first)', async () => {
    const res = await app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
  });

  it('refuses a missing header, a wrong secret, another algorithm, no exp and no id with 401', async () => {
    const cases: [Record<string, string>, string][] = [
      [{}, 'Missing or invalid Authorization header'],
      [{ authorization: 'Basic abc' }, 'Missing or invalid Authorization header'],
      [
        { authorization: `Bearer ${libreChatJwt(ALICE, clock.now(), 'another-secret-0123456789')}` },
        'Invalid token',
      ],
      [{ authorization: 'Bearer test-key' }, 'Invalid token'],
      [
        {
          authorization: `Bearer ${b64url('{"alg":"none","typ":"JWT"}')}.${b64url(JSON.stringify({ id: ALICE, exp: Math.floor(clock.now() / 1000) + 300 }))}.`,
        },
        'Invalid token',
      ],
      [
        { authorization: `Bearer ${libreChatJwt(ALICE, clock.now(), SECRET, { id: ALICE })}` },
        'Invalid token',
      ],
      [
        {
          authorization: `Bearer ${libreChatJwt(ALICE, clock.now(), SECRET, { exp: Math.floor(clock.now() / 1000) + 300 })}`,
        },
        'Invalid token',
      ],
    ];
    for (const [headers, detail] of cases) {
      const res = await postJson(ALICE, '/query', query, headers as ReturnType<typeof bearer>);
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(res.json()).toEqual({ detail, code: 'UNAUTHORIZED' });
    }
    const del = await app.inject({ method: 'DELETE', url: '/documents', payload: '["f-alice-bread"]' });
    expect(del.statusCode).toBe(401);
    expect(await index.count({ fileId: 'f-alice-bread' })).toBeGreaterThan(0);
  });

  it('accepts a token until its five minutes are over, on the injected clock', async () => {
    const token = { authorization: `Bearer ${libreChatJwt(ALICE, clock.now())}` };
    clock.advance(299_000);
    expect((await postJson(ALICE, '/query', query, token)).statusCode).toBe(200);
    clock.advance(1_000);
    const expired = await postJson(ALICE, '/query', query, token);
    expect(expired.statusCode).toBe(401);
    expect(expired.json()).toEqual({ detail: 'Token has expired', code: 'UNAUTHORIZED' });
  });
});

describe('mounting', () => {
  const env = (dir: string, extra: Record<string, string> = {}) => ({
    API_KEY: 'test-key',
    KILDE_DATA_DIR: dir,
    EMBEDDING_PROVIDER: 'none',
    ...extra,
  });
  async function routes(name: string, extra: Record<string, string>) {
    const service = name === 'all' ? allService : findService(name);
    if (!service) throw new Error(name);
    const configured = service.configure(env(await newDir(), extra));
    const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
    const parts = await configured.create(log);
    const built = await buildApp(configured.kernel, { logger: log, parts });
    const status = async (method: 'GET' | 'POST' | 'DELETE', url: string) =>
      (await built.inject({ method, url })).statusCode;
    const seen = {
      embed: await status('POST', '/embed'),
      del: await status('DELETE', '/documents'),
      query: await status('POST', '/query'),
      context: await status('GET', '/documents/x/context'),
    };
    await built.close();
    return seen;
  }

  it('mounts the writing routes on ingest and the reading ones on retrieve, none without the secret', async () => {
    const secret = { LIBRECHAT_JWT_SECRET: SECRET };
    expect(await routes('ingest', secret)).toEqual({ embed: 401, del: 401, query: 404, context: 404 });
    expect(await routes('retrieve', secret)).toEqual({ embed: 404, del: 404, query: 401, context: 401 });
    expect(await routes('retrieve', {})).toEqual({ embed: 404, del: 404, query: 404, context: 404 });
  });

  it('documents the routes in /openapi.json, guarded by the bearer scheme', async () => {
    const configured = allService.configure(env(await newDir(), { LIBRECHAT_JWT_SECRET: SECRET }));
    const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
    const parts = await configured.create(log);
    const built = await buildApp(configured.kernel, { logger: log, parts });
    const res = await built.inject({ method: 'GET', url: '/openapi.json' });
    await built.close();
    expect(res.statusCode).toBe(200);
    const paths = (res.json() as { paths: Record<string, Record<string, { security?: unknown }>> }).paths;
    for (const [path, method] of [
      ['/embed', 'post'],
      ['/text', 'post'],
      ['/documents', 'delete'],
      ['/query', 'post'],
      ['/query_multiple', 'post'],
      ['/documents/{id}/context', 'get'],
      ['/documents', 'get'],
      ['/ids', 'get'],
    ] as const)
      expect(paths[path]?.[method]?.security, `${method} ${path}`).toEqual([{ bearer: [] }]);
  });

  it('refuses a short secret and a prefix that cannot start a collection name at start-up', () => {
    expect(() => allService.configure(env('/tmp/x', { LIBRECHAT_JWT_SECRET: 'short' }))).toThrow(
      /LIBRECHAT_JWT_SECRET/,
    );
    expect(() =>
      allService.configure(
        env('/tmp/x', { LIBRECHAT_JWT_SECRET: SECRET, LIBRECHAT_COLLECTION_PREFIX: '-x' }),
      ),
    ).toThrow(/LIBRECHAT_COLLECTION_PREFIX/);
  });
});
