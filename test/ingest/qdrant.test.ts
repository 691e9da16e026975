import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DENSE_VECTOR, SPARSE_VECTOR } from '../../src/index/contract.js';
import { RESERVED_TENANTS } from '../../src/index/reserved.js';
import { hashEmbedding } from '../fakes/hash-embedding.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, pointsOf, startIngest, versionsOf } from './helpers/harness.js';
import { type FakeS3, S3_KEYS, startS3 } from './helpers/s3.js';

const LONG = Array.from(
  { length: 300 },
  (_, i) => `Rule ${i} of the municipal handbook covers case ${i} and its appeal path.`,
).join(' ');
const SHORT = 'A short policy note about waste collection on Tuesdays and recycling of glass.';

let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let s3: FakeS3;
let h: Harness;

/**
 * Faults at the network boundary between Kilde and Qdrant. A failing retirement sent in a batch
 * request is answered as Qdrant answers an operation that fails: the operations before it applied,
 * none after it.
 */
const faults = { failUpsertNo: 0, upserts: 0, failRetire: 0, failBatch: 0, batches: 0 };
const serverError = (error: string, status: number) =>
  new Response(JSON.stringify({ status: { error }, time: 0 }), { status });
const faultyFetch: typeof fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  const method = init?.method ?? 'GET';
  if (url.startsWith(qdrant.url) && /\/points\/batch/.test(url)) {
    faults.batches++;
    if (faults.failBatch > 0) {
      faults.failBatch--;
      return serverError('Service unavailable', 503);
    }
    const { operations } = JSON.parse(String(init?.body)) as { operations: { delete?: unknown }[] };
    const retire = operations.findIndex((op) => JSON.stringify(op.delete ?? null).includes('must_not'));
    if (retire >= 0 && faults.failRetire > 0) {
      faults.failRetire--;
      await fetch(input, { ...init, body: JSON.stringify({ operations: operations.slice(0, retire) }) });
      return serverError('timeout', 500);
    }
  }
  if (url.startsWith(qdrant.url) && method === 'PUT' && /\/points(\?|$)/.test(url)) {
    faults.upserts++;
    if (faults.upserts === faults.failUpsertNo) {
      return serverError('Service unavailable', 503);
    }
  }
  if (url.startsWith(qdrant.url) && /\/points\/delete/.test(url) && String(init?.body).includes('must_not')) {
    if (faults.failRetire > 0) {
      faults.failRetire--;
      return serverError('timeout', 500);
    }
  }
  return fetch(input, init);
};

beforeAll(async () => {
  qdrant = await startQdrantFake();
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
  s3 = await startS3();
  await s3.createBucket('uploads');
  await s3.put('uploads', 'short.txt', SHORT, 'text/plain');
  h = await startIngest(
    {
      VECTORDB_URI: qdrant.url,
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      EMBEDDING_MODEL: 'fake-embed',
      EMBEDDING_DIM: '16',
      EMBEDDING_MAX_RETRIES: '0',
      CHUNK_SPLIT_BY: 'word',
      CHUNK_SIZE: '12',
      CHUNK_OVERLAP: '2',
      OBJECTSTORE_ENDPOINT: s3.endpoint,
      OBJECTSTORE_ACCESS_KEY: S3_KEYS.accessKeyId,
      OBJECTSTORE_SECRET_KEY: S3_KEYS.secretAccessKey,
    },
    { fetch: faultyFetch },
  );
});
afterAll(async () => {
  await h?.close();
  await Promise.all([qdrant?.close(), embed?.close(), s3?.close()]);
});
beforeEach(() => {
  Object.assign(faults, { failUpsertNo: 0, upserts: 0, failRetire: 0, failBatch: 0, batches: 0 });
});

const upload = async (fileId: string, content: string) => {
  const { body, headers } = multipartBody(
    { file_id: fileId, collection_name: `file-${fileId}`, user_id: 'u1' },
    { name: 'handbook.txt', content },
  );
  return h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
};

/** Every point of the file in the fake, bookkeeping (staging, ledger) included. */
async function everything(fileId: string) {
  return (await qdrant.points('ingestion_files')).filter(
    (p) => (p.payload.meta as { file_id?: string }).file_id === fileId,
  );
}

/** The file's chunks in the fake: points outside Kilde's reserved tenants. */
async function stored(fileId: string) {
  const reserved = Object.values(RESERVED_TENANTS) as string[];
  return (await everything(fileId)).filter(
    (p) => !reserved.includes((p.payload.meta as { collection_name: string }).collection_name),
  );
}

describe('ingest into (schema-validated) Qdrant', () => {
  it('creates the collection with both named vectors and the keyword payload indexes', async () => {
    const info = (await qdrant.info('ingestion_files')) as {
      config: {
        params: { vectors: Record<string, { size: number }>; sparse_vectors: Record<string, unknown> };
      };
      payload_schema: Record<string, unknown>;
    };
    expect(info.config.params.vectors[DENSE_VECTOR]!.size).toBe(16);
    expect(info.config.params.sparse_vectors).toHaveProperty(SPARSE_VECTOR);
    expect(Object.keys(info.payload_schema).sort()).toEqual(
      [
        'meta.collection_name',
        'meta.collection_type',
        'meta.file_id',
        'meta.ingest_version',
        'meta.languages',
        'meta.split_id',
      ].sort(),
    );
  });

  it('writes an S3 object as points with dense + sparse vectors and the Haystack payload', async () => {
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: AUTH,
      payload: {
        bucket: 'uploads',
        key: 'short.txt',
        file_id: 'q-s3',
        collection_name: 'file-q-s3',
        user_id: 'u1',
      },
    });
    expect(res.statusCode).toBe(200);
    const points = await stored('q-s3');
    expect(points).toHaveLength(res.json().chunks_count);
    for (const p of points) {
      const content = p.payload.content as string;
      const vectors = p.vector as Record<string, number[] & { indices: number[] }>;
      expect(vectors[DENSE_VECTOR]).toEqual(
        hashEmbedding(`passage: ${content}`, 16)
          .map((x) => Math.fround(x))
          .map((x) => expect.closeTo(x, 5)),
      );
      expect(vectors[SPARSE_VECTOR]!.indices.length).toBeGreaterThan(0);
      expect(p.payload.meta).toMatchObject({
        file_id: 'q-s3',
        source: 's3://uploads/short.txt',
        name: 'short.txt',
      });
    }
    expect(qdrant.violations).toEqual([]);
  });

  it('writes a multipart upload of more than 128 chunks in one request and replaces it on re-ingest', async () => {
    const first = await upload('q-up', LONG);
    expect(first.statusCode).toBe(200);
    expect(first.json().chunks_count).toBeGreaterThan(128);
    expect([faults.batches, faults.upserts]).toEqual([1, 0]);
    const again = await upload('q-up', LONG);
    expect(again.statusCode).toBe(200);
    expect([faults.batches, faults.upserts]).toEqual([2, 0]);
    const points = await pointsOf(h.index, 'q-up');
    expect(points).toHaveLength(again.json().chunks_count);
    expect(versionsOf(points)).toHaveLength(1);
    expect(qdrant.violations).toEqual([]);
  });

  it('a failed request goes on the staged path; its second batch failing keeps the previous version and removes the first', async () => {
    expect((await upload('q-fail', LONG)).statusCode).toBe(200);
    const before = await pointsOf(h.index, 'q-fail');
    faults.upserts = 0;
    faults.failBatch = 1;
    faults.failUpsertNo = 2;
    const res = await upload('q-fail', `${LONG} An added final rule.`);
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({
      status: false,
      error: 'Writing to the vector index failed',
      code: 'VECTORDB_WRITE_FAILED',
    });
    expect(await pointsOf(h.index, 'q-fail')).toEqual(before);
    expect(await stored('q-fail')).toHaveLength(before.length);
    expect(qdrant.violations).toEqual([]);
  });

  it('a failing clean-up of the old version keeps the committed new one; the sweep retires the old', async () => {
    expect((await upload('q-retire', SHORT)).statusCode).toBe(200);
    const before = await pointsOf(h.index, 'q-retire');
    // Every retirement fails: the one in the version's request (its upsert applied: the version is
    // written, as a count finds), then the retirement's own two tries.
    faults.failRetire = 3;
    const res = await upload('q-retire', `${SHORT} Updated.`);
    expect(res.statusCode).toBe(200);
    const both = await pointsOf(h.index, 'q-retire');
    expect(versionsOf(both)).toHaveLength(2);
    expect(await h.part.pipeline().service.sweepVersions(0)).toMatchObject({ finished: 1 });
    const after = await pointsOf(h.index, 'q-retire');
    expect(after).toHaveLength(res.json().chunks_count);
    expect(versionsOf(after)).not.toContain(before[0]!.meta.ingest_version);
    expect(await everything('q-retire')).toHaveLength(after.length + 1); // + the committed-version record
    expect(qdrant.violations).toEqual([]);
  });

  it('deletes every point of a file', async () => {
    expect((await upload('q-del', SHORT)).statusCode).toBe(200);
    const n = (await stored('q-del')).length;
    const res = await h.app.inject({ method: 'DELETE', url: '/api/v1/documents/q-del', headers: AUTH });
    expect(res.json()).toEqual({ status: true, file_id: 'q-del', chunks_deleted: n });
    expect(await everything('q-del')).toHaveLength(0);
  });

  it('is ready when Qdrant answers', async () => {
    expect((await h.app.inject({ url: '/health/ready' })).statusCode).toBe(200);
  });
});
