import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pointId } from '../../src/index/contract.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import {
  FIXTURES,
  type Harness,
  multipartBody,
  pointsOf,
  startIngest,
  TOKENIZER,
  versionsOf,
} from './helpers/harness.js';
import { type FakeS3, S3_KEYS, startS3 } from './helpers/s3.js';

const NOTES = `# Kilde notes

## Ingestion

Kilde fetches a file from object storage, extracts its text and splits it into chunks.
Each chunk is embedded and written to the shared vector index with its metadata.

## Retrieval

The retrieval service searches the same index with dense and lexical queries.
`;

let s3: FakeS3;
let embed: FakeEmbeddingsServer;
let h: Harness;

const s3Env = () => ({
  OBJECTSTORE_ENDPOINT: s3.endpoint,
  OBJECTSTORE_ACCESS_KEY: S3_KEYS.accessKeyId,
  OBJECTSTORE_SECRET_KEY: S3_KEYS.secretAccessKey,
  OBJECTSTORE_ALLOWED_BUCKETS: 'uploads',
});
const denseEnv = () => ({
  EMBEDDING_PROVIDER: 'http-compat',
  EMBEDDING_API_BASE_URL: embed.baseUrl,
  EMBEDDING_MODEL: 'fake-embed',
  EMBEDDING_DIM: '32',
  EMBEDDING_MAX_RETRIES: '0',
  TOKENIZER_MODEL: TOKENIZER,
  CHUNK_SPLIT_BY: 'markdown',
  CHUNK_SIZE: '60',
  CHUNK_OVERLAP: '10',
});

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('uploads');
  await s3.createBucket('elsewhere');
  await s3.put('uploads', 'u1/notes.md', NOTES, 'text/markdown');
  await s3.put('elsewhere', 'notes.md', NOTES);
  await s3.put(
    'uploads',
    'u1/report.pdf',
    await readFile(join(FIXTURES, 'normal_4pages.pdf')),
    'application/pdf',
  );
  embed = await startFakeOpenAIEmbeddings({ dim: 32 });
  h = await startIngest({ ...s3Env(), ...denseEnv() });
});
afterAll(async () => {
  await h?.close();
  await embed?.close();
  await s3?.close();
});
beforeEach(() => {
  embed.requests.length = 0;
  embed.always = undefined;
  embed.faults = [];
});

const s3Body = (over: Record<string, unknown> = {}) => ({
  s3_bucket: 'uploads',
  s3_key: 'u1/notes.md',
  file_id: 'f-notes',
  filename: 'notes.md',
  collection_name: 'file-f-notes',
  collection_type: 'file',
  user_id: 'u1',
  ...over,
});

const put = (payload: unknown, headers: Record<string, string> = {}, url = '/api/v1/ingest') =>
  h.app.inject({ method: 'PUT', url, headers: { ...AUTH, ...headers }, payload: payload as string });

describe('PUT /api/v1/ingest with an object-storage reference', () => {
  it('fetches the object from S3, embeds every chunk and writes them to the index', async () => {
    const res = await put(s3Body());
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      status: true,
      collection_name: 'file-f-notes',
      chunks_count: expect.any(Number),
      extraction: { engine: 'inprocess', profile: null },
    });
    expect(body.chunks_count).toBeGreaterThanOrEqual(2);

    const points = await pointsOf(h.index, 'f-notes');
    expect(points).toHaveLength(body.chunks_count);
    const [version] = versionsOf(points);
    expect(version).toMatch(/^[0-9a-f]{32}$/);
    points.forEach((p, i) => {
      expect(p.id).toBe(pointId('f-notes', version!, i));
      expect(p.meta).toMatchObject({
        collection_name: 'file-f-notes',
        collection_type: 'file',
        file_id: 'f-notes',
        ingest_version: version,
        split_id: i,
        name: 'notes.md',
        source: 's3://uploads/u1/notes.md',
        user_id: 'u1',
        languages: ['en'],
      });
      expect(NOTES.slice(p.meta.char_start, p.meta.char_end).trim()).toContain(p.content.trim().slice(0, 20));
    });
    // markdown mode records the heading breadcrumb
    expect(points.some((p) => p.meta.headers?.join(' > ') === 'Kilde notes > Retrieval')).toBe(true);

    // every chunk went to the embedding endpoint with the document prefix, and its vector is stored
    expect(embed.inputs()).toEqual(points.map((p) => `passage: ${p.content}`));
    const { hashEmbedding } = await import('../fakes/hash-embedding.js');
    const hit = await h.index.searchDense(
      hashEmbedding(`passage: ${points[1]!.content}`, 32),
      { fileId: 'f-notes' },
      1,
    );
    expect(hit[0]!.id).toBe(points[1]!.id);
    expect(hit[0]!.score).toBeCloseTo(1, 5);
  });

  it('accepts the spec spelling bucket/key, a trailing slash and overwrite as a boolean', async () => {
    const { s3_bucket: _b, s3_key: _k, ...rest } = s3Body({ file_id: 'f-spec', collection_name: 'team-a' });
    const res = await put(
      { ...rest, bucket: 'uploads', key: 'u1/notes.md', overwrite: true },
      {},
      '/api/v1/ingest/',
    );
    expect(res.statusCode).toBe(200);
    expect(res.json().collection_name).toBe('team-a');
    expect((await pointsOf(h.index, 'f-spec')).every((p) => p.meta.collection_name === 'team-a')).toBe(true);
  });

  it('treats null optional fields (a Python client sending None) as absent', async () => {
    const res = await put(
      s3Body({
        file_id: 'f-nulls',
        collection_name: 'file-f-nulls',
        filename: null,
        collection_type: null,
        overwrite: null,
        bucket: null,
        key: null,
      }),
    );
    expect(res.statusCode, res.body).toBe(200);
    const points = await pointsOf(h.index, 'f-nulls');
    expect(points[0]?.meta).toMatchObject({ name: 'notes.md', collection_type: 'file' });
    // Required fields stay required.
    const missing = await put(s3Body({ file_id: 'f-nulls', user_id: null }));
    expect(missing.statusCode).toBe(400);
  });

  it('keeps page numbers of a PDF and its document metadata', async () => {
    const res = await put(
      s3Body({
        s3_key: 'u1/report.pdf',
        file_id: 'f-pdf',
        filename: 'report.pdf',
        collection_name: 'file-f-pdf',
      }),
    );
    expect(res.statusCode).toBe(200);
    const points = await pointsOf(h.index, 'f-pdf');
    const pages = points.map((p) => p.meta.page);
    expect(pages.every((p) => typeof p === 'number' && p >= 0 && p <= 3)).toBe(true);
    expect(new Set(pages).size).toBeGreaterThan(1);
    expect(pages).toEqual([...pages].sort((a, b) => a! - b!));
  });

  it('replaces the previous version on re-ingest: one version, no duplicate vectors', async () => {
    await put(s3Body({ file_id: 'f-re', collection_name: 'file-f-re' }));
    const before = await pointsOf(h.index, 'f-re');
    const res = await put(s3Body({ file_id: 'f-re', collection_name: 'file-f-re' }));
    expect(res.statusCode).toBe(200);
    const after = await pointsOf(h.index, 'f-re');
    expect(after).toHaveLength(before.length);
    expect(versionsOf(after)).toHaveLength(1);
    expect(versionsOf(after)[0]).not.toBe(versionsOf(before)[0]);
    expect(new Set(after.map((p) => p.id)).size).toBe(after.length);
  });

  it('answers 409 for overwrite=false when the file is indexed, leaving that version untouched', async () => {
    const first = await put(s3Body({ file_id: 'f-keep', collection_name: 'file-f-keep', overwrite: false }));
    expect(first.statusCode).toBe(200);
    const before = await pointsOf(h.index, 'f-keep');
    embed.requests.length = 0;
    const res = await put(s3Body({ file_id: 'f-keep', collection_name: 'file-f-keep', overwrite: false }));
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({
      status: false,
      error: expect.stringMatching(/already indexed/),
      code: 'INVALID_REQUEST',
    });
    expect(await pointsOf(h.index, 'f-keep')).toEqual(before);
    expect(embed.requests).toHaveLength(0);
  });

  it('answers 404 OBJECT_FETCH_FAILED for a missing object (a caller error), keeping the previous version', async () => {
    const target = { file_id: 'f-gone', collection_name: 'file-f-gone' };
    expect((await put(s3Body(target))).statusCode).toBe(200);
    const before = await pointsOf(h.index, 'f-gone');
    const res = await put(s3Body({ ...target, s3_key: 'u1/missing.pdf' }));
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      status: false,
      error: 'Could not fetch s3://uploads/u1/missing.pdf: object not found',
      code: 'OBJECT_FETCH_FAILED',
    });
    expect(await pointsOf(h.index, 'f-gone')).toEqual(before);
  });
});

describe('PUT /api/v1/ingest with a multipart upload', () => {
  it('streams the file part and ingests it like the object path', async () => {
    const { body, headers } = multipartBody(
      {
        file_id: 'f-up',
        filename: 'notes.md',
        collection_name: 'user-memory-u9',
        user_id: 'u9',
        overwrite: 'yes',
      },
      { name: 'notes.md', content: NOTES, type: 'text/markdown' },
    );
    const res = await put(body, headers);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: true, collection_name: 'user-memory-u9' });
    const points = await pointsOf(h.index, 'f-up');
    expect(points.length).toBe(res.json().chunks_count);
    expect(points[0]!.meta).toMatchObject({
      name: 'notes.md',
      source: 'notes.md',
      user_id: 'u9',
      collection_type: 'file',
    });
  });

  it('takes the file name from the part when no filename field is sent', async () => {
    const { body, headers } = multipartBody(
      { file_id: 'f-up2', collection_name: 'c', user_id: 'u9' },
      { name: 'from-part.md', content: NOTES },
    );
    const res = await put(body, headers);
    expect(res.statusCode).toBe(200);
    expect((await pointsOf(h.index, 'f-up2'))[0]!.meta.name).toBe('from-part.md');
  });
});

describe('gating before any work (INVALID_REQUEST)', () => {
  const upload = (fields: Record<string, string>, content = NOTES) =>
    multipartBody(
      { file_id: 'g1', collection_name: 'c', user_id: 'u1', ...fields },
      { name: 'notes.md', content },
    );

  const json = { 'content-type': 'application/json' };
  const asJson = (o: Record<string, unknown>) => ({ payload: JSON.stringify(o), headers: json });
  const asForm = (m: { body: Buffer; headers: Record<string, string> }) => ({
    payload: m.body,
    headers: m.headers,
  });
  const cases: Array<{
    name: string;
    payload: string | Buffer;
    headers: Record<string, string>;
    status: number;
  }> = [
    { name: 'malformed JSON', payload: '{"file_id": ', headers: json, status: 400 },
    { name: 'an empty body', payload: '', headers: json, status: 400 },
    { name: 'a blank file_id', ...asJson(s3Body({ file_id: '   ' })), status: 400 },
    { name: 'a missing key', ...asJson({ ...s3Body({ file_id: 'g1' }), s3_key: undefined }), status: 400 },
    { name: 'overwrite of the wrong type', ...asJson(s3Body({ file_id: 'g1', overwrite: 3 })), status: 400 },
    { name: 'text/plain', payload: 'hello', headers: { 'content-type': 'text/plain' }, status: 415 },
    {
      name: 'a form-encoded body',
      payload: 'file_id=g1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      status: 415,
    },
    {
      name: 'a bucket outside OBJECTSTORE_ALLOWED_BUCKETS',
      ...asJson(s3Body({ file_id: 'g1', s3_bucket: 'elsewhere', s3_key: 'notes.md' })),
      status: 403,
    },
    {
      name: 'file-… naming another file',
      ...asJson(s3Body({ file_id: 'g1', collection_name: 'file-other' })),
      status: 403,
    },
    {
      name: 'user-memory-… naming another user',
      ...asJson(s3Body({ file_id: 'g1', collection_name: 'user-memory-u2' })),
      status: 403,
    },
    { name: 'multipart overwrite=maybe', ...asForm(upload({ overwrite: 'maybe' })), status: 400 },
    {
      name: 'multipart file-… naming another file',
      ...asForm(upload({ collection_name: 'file-zzz' })),
      status: 403,
    },
    {
      name: 'multipart without a file part',
      ...asForm(multipartBody({ file_id: 'g1', collection_name: 'c', user_id: 'u1' })),
      status: 400,
    },
    { name: 'multipart with a blank user_id', ...asForm(upload({ user_id: ' ' })), status: 400 },
  ];
  it.each(cases)('rejects $name with $status', async ({ payload, headers, status }) => {
    const res = await put(payload, headers);
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST', error: expect.any(String) });
    expect(embed.requests).toHaveLength(0);
    expect(await h.index.count({ fileId: 'g1' })).toBe(0);
  });

  it('names the offending fields', async () => {
    const res = await put(s3Body({ file_id: 'g1', colour: 'red', user_id: '', overwrite: 3 }));
    expect(res.json().error).toMatch(/user_id must not be blank/);
    expect(res.json().error).toMatch(/overwrite must be a boolean/);
    expect(res.json().error).not.toMatch(/colour/);
  });

  it('lets other collection names through', async () => {
    const res = await put(s3Body({ file_id: 'g-any', collection_name: 'knowledge-base-1' }));
    expect(res.statusCode).toBe(200);
  });

  it('requires the bearer key on every route', async () => {
    for (const [method, url] of [
      ['PUT', '/api/v1/ingest'],
      ['POST', '/api/v1/extract'],
      ['DELETE', '/api/v1/documents/x'],
      ['GET', '/api/v1/documents/x/chunks'],
    ] as const) {
      const res = await h.app.inject({ method, url, ...(method === 'PUT' ? { payload: s3Body() } : {}) });
      expect(res.statusCode).toBe(401);
    }
  });
});

describe('size limit (MAX_UPLOAD_BYTES)', () => {
  let small: Harness;
  beforeAll(async () => {
    small = await startIngest({ ...s3Env(), MAX_UPLOAD_BYTES: '100' });
  });
  afterAll(() => small.close());

  it('refuses an object over the limit from HeadObject, before fetching it', async () => {
    const res = await small.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: AUTH,
      payload: s3Body({ file_id: 'big', collection_name: 'file-big' }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      status: false,
      error: 'File exceeds MAX_UPLOAD_BYTES (100 bytes)',
      code: 'INVALID_REQUEST',
    });
    expect(await small.index.count({ fileId: 'big' })).toBe(0);
  });

  it('refuses a multipart file over the limit while it streams', async () => {
    const { body, headers } = multipartBody(
      { file_id: 'big', collection_name: 'c', user_id: 'u' },
      { name: 'big.txt', content: 'x'.repeat(5000) },
    );
    const res = await small.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('INVALID_REQUEST');
  });

  it('accepts a file of exactly the limit', async () => {
    const { body, headers } = multipartBody(
      { file_id: 'edge', collection_name: 'c', user_id: 'u' },
      { name: 'edge.txt', content: 'word '.repeat(20) },
    );
    const res = await small.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode).toBe(200);
  });
});
