import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChunkMeta, type IndexPoint, pointId } from '../../src/index/contract.js';
import { openIndex } from '../../src/index/open.js';
import { commitVersion } from '../../src/versions/publish.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { runVectorIndexContract } from './contract-suite.js';
import { runQdrantAdapterSuite } from './qdrant-suite.js';
import { openQdrant, type QdrantTarget, settingsFor, silentLog, uniqueCollection } from './qdrant-target.js';

let fake: QdrantFake;
const target = (): QdrantTarget => ({ url: fake.url, violations: () => fake.violations });

beforeAll(async () => {
  fake = await startQdrantFake();
});
afterAll(async () => {
  await fake.close();
});
// Every request any test below sends must match Qdrant's published OpenAPI document.
afterEach(() => {
  expect(fake.violations.splice(0)).toEqual([]);
});

runVectorIndexContract('qdrant (schema-validated fake)', async (opts) =>
  openQdrant(target(), {
    collection: uniqueCollection(),
    sparse: opts.sparse,
    ...(opts.denseDim ? { denseDim: opts.denseDim } : {}),
  }),
);

runQdrantAdapterSuite('schema-validated fake', target);

function point(collection: string, fileId: string, split: number, dense = [1, 0, 0, 0]): IndexPoint {
  const meta: ChunkMeta = {
    collection_name: collection,
    collection_type: 'knowledge',
    file_id: fileId,
    ingest_version: 'v1',
    split_id: split,
  };
  return {
    id: pointId(fileId, 'v1', split),
    content: `chunk ${split}`,
    meta,
    dense,
    sparse: { indices: [split + 1], values: [1] },
  };
}

const since = (n: number) => fake.requests.slice(n);

describe('Qdrant adapter on the wire', () => {
  it('sends the exact create-collection and payload-index bodies, waiting for each', async () => {
    const collection = uniqueCollection();
    const before = fake.requests.length;
    await openQdrant(target(), { collection, denseDim: 1024 }).ensureCollection();
    const sent = since(before).map((r) => [r.method, r.path + r.query, r.body]);
    const base = `/collections/${collection}`;
    expect(sent).toEqual([
      ['GET', base, undefined],
      [
        'PUT',
        base,
        {
          vectors: { 'text-dense': { size: 1024, distance: 'Cosine' } },
          hnsw_config: { m: 0, payload_m: 16 },
          sparse_vectors: { 'text-sparse': { modifier: 'idf' } },
        },
      ],
      ['GET', base, undefined],
      [
        'PUT',
        `${base}/index?wait=true`,
        { field_name: 'meta.collection_name', field_schema: { type: 'keyword', is_tenant: true } },
      ],
      ['PUT', `${base}/index?wait=true`, { field_name: 'meta.collection_type', field_schema: 'keyword' }],
      ['PUT', `${base}/index?wait=true`, { field_name: 'meta.languages', field_schema: 'keyword' }],
      ['PUT', `${base}/index?wait=true`, { field_name: 'meta.file_id', field_schema: 'keyword' }],
      ['PUT', `${base}/index?wait=true`, { field_name: 'meta.ingest_version', field_schema: 'keyword' }],
      ['PUT', `${base}/index?wait=true`, { field_name: 'meta.split_id', field_schema: 'integer' }],
    ]);
    // A second start finds everything in place and only reads.
    const again = fake.requests.length;
    await openQdrant(target(), { collection, denseDim: 1024 }).ensureCollection();
    expect(since(again).map((r) => r.method)).toEqual(['GET']);
  });

  it('creates a lexical-only collection with no dense vector', async () => {
    const collection = uniqueCollection();
    const before = fake.requests.length;
    await openQdrant(target(), { collection, sparse: true }).ensureCollection();
    expect(since(before).find((r) => r.method === 'PUT')?.body).toEqual({
      vectors: {},
      hnsw_config: { m: 0, payload_m: 16 },
      sparse_vectors: { 'text-sparse': { modifier: 'idf' } },
    });
  });

  it('searches hybrid in ONE query call: two filtered prefetches fused by RRF', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), { collection, denseDim: 4 });
    await index.ensureCollection();
    await index.upsert([point(collection, 'f', 0)]);
    const before = fake.requests.length;
    const sparse = { indices: [1], values: [1] };
    const hits = await index.searchHybrid(
      { text: 'q', dense: [1, 0, 0, 0], sparse },
      { collectionNames: [collection], notIngestVersion: 'v0' },
      5,
    );
    expect(hits.map((h) => h.meta.file_id)).toEqual(['f']);
    const calls = since(before);
    expect(calls.map((r) => r.path)).toEqual([`/collections/${collection}/points/query`]);
    const filter = {
      must: [{ key: 'meta.collection_name', match: { any: [collection] } }],
      must_not: [{ key: 'meta.ingest_version', match: { value: 'v0' } }],
    };
    expect(calls[0]?.body).toEqual({
      prefetch: [
        { query: [1, 0, 0, 0], using: 'text-dense', filter, limit: 20 },
        { query: sparse, using: 'text-sparse', filter, limit: 20 },
      ],
      query: { fusion: 'rrf' },
      limit: 5,
      with_payload: true,
    });
  });

  it('searches dense through the Query API with the named vector and filter', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), { collection, denseDim: 4 });
    await index.ensureCollection();
    const before = fake.requests.length;
    await index.searchDense([0, 1, 0, 0], { fileId: 'x', languages: ['da'] }, 7);
    expect(since(before)[0]?.body).toEqual({
      query: [0, 1, 0, 0],
      using: 'text-dense',
      limit: 7,
      with_payload: true,
      filter: {
        must: [
          { key: 'meta.file_id', match: { value: 'x' } },
          { key: 'meta.languages', match: { any: ['da'] } },
        ],
      },
    });
  });

  it('upserts in batches and counts before deleting by filter', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), { collection, denseDim: 4 }, { upsertBatchSize: 10 });
    await index.ensureCollection();
    const before = fake.requests.length;
    await index.upsert(Array.from({ length: 25 }, (_, i) => point(collection, 'big', i)));
    const puts = since(before);
    expect(puts.map((r) => `${r.method} ${r.query}`)).toEqual(Array(3).fill('PUT ?wait=true'));
    expect(puts.map((r) => (r.body as { points: unknown[] }).points.length)).toEqual([10, 10, 5]);
    const del = fake.requests.length;
    expect(await index.deleteWhere({ fileId: 'big' })).toBe(25);
    expect(since(del).map((r) => r.operationId)).toEqual(['count_points', 'delete_points']);
    expect(since(del)[1]?.query).toBe('?wait=true');
  });

  it('writes and retires a version that fits one request in one batch request, each point once', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), { collection, denseDim: 4 });
    await index.ensureCollection();
    const log = pino({ level: 'silent' });
    const commit = (version: string) => {
      const points = [0, 1, 2].map((split) => {
        const p = point(collection, 'one', split);
        return { ...p, id: pointId('one', version, split), meta: { ...p.meta, ingest_version: version } };
      });
      const scope = { fileId: 'one', collectionName: collection, version };
      return commitVersion(index, scope, points, { log, now: () => 7 }).then(() => points);
    };
    await commit('v1');
    const before = fake.requests.length;
    const v2 = await commit('v2');
    const sent = since(before);
    expect(sent.map((r) => `${r.method} ${r.path}${r.query}`)).toEqual([
      `POST /collections/${collection}/points/batch?wait=true`,
    ]);
    const { operations } = sent[0]!.body as {
      operations: [
        { upsert: { points: { id: string; payload: { meta: ChunkMeta } }[] } },
        { delete: unknown },
      ];
    };
    expect(operations).toHaveLength(2);
    // The version's points straight under their collection, between its two ledger entries.
    const written = operations[0].upsert.points;
    expect(written.map((p) => p.payload.meta.collection_name)).toEqual([
      '\u0001kilde:writing',
      collection,
      collection,
      collection,
      '\u0001kilde:committed',
    ]);
    expect(written.slice(1, 4).map((p) => p.id)).toEqual(v2.map((p) => p.id));
    // Then the file's other versions in the collection and the `writing` entry, in one delete.
    expect(operations[1]).toEqual({
      delete: {
        filter: {
          should: [
            {
              must: [
                { key: 'meta.collection_name', match: { any: [collection] } },
                { key: 'meta.file_id', match: { value: 'one' } },
              ],
              must_not: [{ key: 'meta.ingest_version', match: { value: 'v2' } }],
            },
            {
              must: [
                { key: 'meta.collection_name', match: { value: '\u0001kilde:writing' } },
                { key: 'meta.file_id', match: { value: 'one' } },
                { key: 'meta.ingest_version', match: { value: 'v2' } },
              ],
            },
          ],
        },
      },
    });
    const left = await fake.points(collection);
    expect(left.map((p) => (p.payload.meta as ChunkMeta).ingest_version).sort()).toEqual([
      'v2',
      'v2',
      'v2',
      'v2',
    ]);
  });

  it('answers an empty tenant set without asking the server', async () => {
    const index = openQdrant(target(), { collection: uniqueCollection(), denseDim: 4 });
    const before = fake.requests.length;
    expect(await index.searchDense([1, 0, 0, 0], { collectionNames: [] }, 5)).toEqual([]);
    expect(await index.count({ collectionNames: [] })).toBe(0);
    expect(await index.deleteWhere({ collectionNames: [] })).toBe(0);
    expect(since(before)).toEqual([]);
  });

  it('uses the injected fetch and is reachable through openIndex', async () => {
    const urls: string[] = [];
    const counting: typeof fetch = (input, init) => {
      urls.push(String(input));
      return fetch(input, init);
    };
    const collection = uniqueCollection();
    const index = await openIndex(settingsFor(target(), { collection, denseDim: 4 }), {
      log: silentLog,
      fetch: counting,
    });
    expect(index.engine).toBe('qdrant');
    await index.ensureCollection();
    expect(urls[0]).toBe(`${fake.url}/collections/${collection}`);
    expect(urls.length).toBe(fake.requests.filter((r) => r.path.includes(collection)).length);
  });
});

describe('Qdrant adapter failures', () => {
  it('times out after the configured time, once, without retrying', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), { collection, denseDim: 4, timeoutMs: 100 });
    const before = fake.requests.length;
    fake.setDelay(400);
    try {
      await expect(index.ping()).rejects.toThrow(
        `Qdrant GET /collections/${collection} timed out after 100 ms`,
      );
    } finally {
      fake.setDelay(0);
    }
    expect(since(before).length).toBe(1);
  });

  it('reports unreachable servers with the operation', async () => {
    const index = openQdrant({ url: 'http://127.0.0.1:1', violations: () => [] }, { collection: 'x' });
    await expect(index.describe()).rejects.toThrow(/^Qdrant GET \/collections\/x failed: /);
  });

  it('sends the API key and surfaces Qdrant errors with status and message', async () => {
    const guarded = await startQdrantFake({ apiKey: 'sekrit' });
    try {
      const ok = openQdrant(
        { url: guarded.url, apiKey: 'sekrit', violations: () => [] },
        { collection: 'c', denseDim: 4 },
      );
      await ok.ensureCollection();
      expect(guarded.requests.every((r) => r.headers['api-key'] === 'sekrit')).toBe(true);
      const wrong = openQdrant(
        { url: guarded.url, apiKey: 'nope', violations: () => [] },
        { collection: 'c' },
      );
      await expect(wrong.count({})).rejects.toThrow(
        'Qdrant POST /collections/c/points/count failed: HTTP 401: Invalid API key or JWT',
      );
      await expect(ok.searchLexical({ text: 'q' }, {}, 3)).rejects.toThrow('needs a sparse');
      expect(guarded.violations).toEqual([]);
    } finally {
      await guarded.close();
    }
  });
});

// What the fake does on its own (501 for what it does not implement, its memory): nothing to check
// against a real server, where the fake is a proxy (`npm run test:qdrant-live`).
describe.skipIf(process.env.QDRANT_URL)('the fake Qdrant itself', () => {
  it('records schema violations for invalid requests and answers 400', async () => {
    const own = await startQdrantFake();
    try {
      const send = (method: string, path: string, body: unknown) =>
        fetch(own.url + path, {
          method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      expect(
        (await send('PUT', '/collections/c', { vectors: { d: { size: 0, distance: 'Cosine' } } })).status,
      ).toBe(400);
      await send('PUT', '/collections/c', { vectors: { d: { size: 2, distance: 'Cosine' } } });
      const badSparse = { points: [{ id: 1, vector: { s: { indices: [-1], values: [1] } } }] };
      expect((await send('PUT', '/collections/c/points', badSparse)).status).toBe(400);
      const badFilter = { filter: { must: [], musnt: [] } };
      expect((await send('POST', '/collections/c/points/count', badFilter)).status).toBe(400);
      expect((await send('POST', '/collections/c/points/count?wait=true', {})).status).toBe(400);
      expect((await send('POST', '/collections/c/points/serch', {})).status).toBe(404);
      expect(
        (await send('POST', '/collections/c/points/query', { query: [1, 2], score_threshold: 0.5 })).status,
      ).toBe(501);
      expect(own.violations).toHaveLength(6);
      expect(own.violations.join('\n')).toMatch(/size must be >= 1/);
      expect(own.violations.join('\n')).toMatch(/query parameter "wait" is not defined/);
    } finally {
      await own.close();
    }
  });
});
