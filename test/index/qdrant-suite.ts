import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ChunkMeta, type IndexPoint, pointId } from '../../src/index/contract.js';
import { commitVersion } from '../../src/versions/publish.js';
import { openQdrant, type QdrantTarget, rawQdrant, uniqueCollection } from './qdrant-target.js';

/**
 * Qdrant-specific behaviour the shared contract suite does not cover: start-up mismatch errors, the
 * collection layout Qdrant actually ends up with, foreign payloads, and a labelled hybrid set where
 * fusion beats both sides alone. Runs against the fake and, with `QDRANT_URL`, a real Qdrant.
 */
const DIM = 4;
const PURR = 7; // sparse term id shared by the lexical matches
const OTHER = 11;

/** Query [1,0,0,0] + term PURR: dense top is B, lexical top is C, fused top is D (2nd in both). */
const LABELLED: { key: string; dense: number[]; purr?: number }[] = [
  { key: 'B', dense: [1, 0.05, 0, 0] },
  { key: 'D', dense: [1, 0.3, 0, 0], purr: 2 },
  { key: 'A', dense: [1, 0.6, 0, 0], purr: 1 },
  { key: 'E', dense: [0.5, 1, 0, 0] },
  { key: 'F', dense: [0, 1, 0.2, 0] },
  { key: 'C', dense: [-0.5, 1, 0, 0], purr: 3 },
];

function labelledPoint(collection: string, d: (typeof LABELLED)[number]): IndexPoint {
  const meta: ChunkMeta = {
    collection_name: collection,
    collection_type: 'knowledge',
    file_id: `doc-${d.key}`,
    ingest_version: 'v1',
    split_id: 0,
  };
  return {
    id: pointId(meta.file_id, 'v1', 0),
    content: `document ${d.key}`,
    meta,
    dense: d.dense,
    sparse: d.purr ? { indices: [PURR], values: [d.purr] } : { indices: [OTHER], values: [1] },
  };
}

const collectionInfo = z.object({
  result: z.object({
    config: z.object({
      params: z.object({ vectors: z.unknown(), sparse_vectors: z.unknown() }),
      hnsw_config: z.object({ m: z.number(), payload_m: z.number() }),
    }),
    payload_schema: z.record(
      z.string(),
      z.object({ data_type: z.string(), params: z.object({ is_tenant: z.boolean().optional() }).optional() }),
    ),
  }),
});

export function runQdrantAdapterSuite(name: string, target: () => QdrantTarget): void {
  const made: string[] = [];
  const fresh = (extra: { denseDim?: number; sparse?: boolean } = {}) => {
    const collection = uniqueCollection();
    made.push(collection);
    return { collection, index: openQdrant(target(), { collection, denseDim: DIM, ...extra }) };
  };

  describe(`Qdrant adapter: ${name}`, () => {
    afterAll(async () => {
      for (const c of made.splice(0)) await rawQdrant(target(), 'DELETE', `/collections/${c}`);
    });

    it('creates the collection as specified: named vectors, IDF sparse, per-tenant HNSW, keyword and split indexes', async () => {
      const { collection, index } = fresh();
      expect(await index.describe()).toEqual({ exists: false, hasSparse: false, vectorNames: [] });
      await expect(index.ping()).rejects.toThrow(`Qdrant collection "${collection}" does not exist`);
      await index.ensureCollection();
      await index.ensureCollection(); // idempotent
      await index.ping();
      const { status, json } = await rawQdrant(target(), 'GET', `/collections/${collection}`);
      expect(status).toBe(200);
      const info = collectionInfo.parse(json).result;
      expect(info.config.params.vectors).toMatchObject({ 'text-dense': { size: DIM, distance: 'Cosine' } });
      expect(info.config.params.sparse_vectors).toMatchObject({ 'text-sparse': { modifier: 'idf' } });
      expect(info.config.hnsw_config).toMatchObject({ m: 0, payload_m: 16 });
      const fields = ['collection_name', 'collection_type', 'languages', 'file_id', 'ingest_version'];
      expect(Object.keys(info.payload_schema).sort()).toEqual(
        [...fields.map((f) => `meta.${f}`), 'meta.split_id'].sort(),
      );
      for (const [name, f] of Object.entries(info.payload_schema)) {
        expect(f.data_type).toBe(name === 'meta.split_id' ? 'integer' : 'keyword');
      }
      expect(info.payload_schema['meta.collection_name']?.params?.is_tenant).toBe(true);
      expect(await index.describe()).toEqual({
        exists: true,
        denseSize: DIM,
        hasSparse: true,
        vectorNames: ['text-dense', 'text-sparse'],
      });
    });

    it('fails at start-up when the collection has another dense size, naming both sides', async () => {
      const { collection } = fresh();
      await rawQdrant(target(), 'PUT', `/collections/${collection}`, {
        vectors: { 'text-dense': { size: 8, distance: 'Cosine' } },
        sparse_vectors: { 'text-sparse': { modifier: 'idf' } },
      });
      const index = openQdrant(target(), { collection, denseDim: DIM });
      await expect(index.ensureCollection()).rejects.toThrow(
        `Qdrant collection "${collection}" has "text-dense" of size 8, but EMBEDDING_DIM is ${DIM}`,
      );
      expect(await index.describe()).toMatchObject({ exists: true, denseSize: 8 });
    });

    it('fails at start-up when vector names are missing, listing what the collection has', async () => {
      const { collection } = fresh();
      await rawQdrant(target(), 'PUT', `/collections/${collection}`, {
        vectors: { size: DIM, distance: 'Cosine' },
      });
      const index = openQdrant(target(), { collection, denseDim: DIM, sparse: true });
      const err = await index.ensureCollection().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(err)).toContain(
        `has no "text-dense" vector (its dense vectors: (unnamed)), but Kilde is configured for "text-dense" of size ${DIM}`,
      );
      expect(String(err)).toContain(
        'has no "text-sparse" vector (its sparse vectors: none), but sparse embeddings are enabled',
      );
    });

    it('accepts an existing dense-only collection when sparse is off, and reports no sparse', async () => {
      const { collection, index } = fresh({ sparse: false });
      await index.ensureCollection();
      expect(index.hasSparse()).toBe(false);
      const info = await index.describe();
      expect(info).toEqual({ exists: true, denseSize: DIM, hasSparse: false, vectorNames: ['text-dense'] });
      const sparseWanted = openQdrant(target(), { collection, denseDim: DIM, sparse: true });
      await expect(sparseWanted.ensureCollection()).rejects.toThrow('text-sparse');
    });

    it('fuses on a labelled set: dense top B, lexical top C, hybrid top D', async () => {
      const { collection, index } = fresh();
      await index.ensureCollection();
      await index.upsert(LABELLED.map((d) => labelledPoint(collection, d)));
      const filter = { collectionNames: [collection] };
      const key = (h: { meta: ChunkMeta }) => h.meta.file_id.slice(4);
      const dense = await index.searchDense([1, 0, 0, 0], filter, 6);
      expect(dense.map(key)).toEqual(['B', 'D', 'A', 'E', 'F', 'C']);
      expect(dense[0]?.score).toBeCloseTo((1 / Math.hypot(1, 0.05) + 1) / 2, 5);
      expect(dense[5]?.score).toBeCloseTo((-0.5 / Math.hypot(0.5, 1) + 1) / 2, 5);
      const sparse = { indices: [PURR], values: [1] };
      const lexical = await index.searchLexical({ text: 'purr', sparse }, filter, 6);
      const hybrid = await index.searchHybrid({ text: 'purr', sparse, dense: [1, 0, 0, 0] }, filter, 6);
      if (process.env.QDRANT_CLUSTER_URLS) {
        // Sharded (the live cluster round): Qdrant computes the IDF of `text-sparse` per shard, so
        // six points spread over three shards rank by each shard's statistics, not the
        // collection's (seen on Qdrant 1.18.3). The matches are the same; their order is not.
        expect(lexical.map(key).sort()).toEqual(['A', 'C', 'D']);
        expect(hybrid.map(key)).toContain('D');
        return;
      }
      expect(lexical.map(key)).toEqual(['C', 'D', 'A']);
      expect(hybrid.map(key).slice(0, 2)).toEqual(['D', 'C']);
      // Raw RRF: D is second in both lists, so 2 / (1 + k) with Qdrant's k = 2.
      expect(hybrid[0]?.score).toBeCloseTo(2 / 3, 5);
    });

    it('reads points written by other tools (Haystack layout, no ingest_version)', async () => {
      const { collection, index } = fresh();
      await index.ensureCollection();
      const id = '0b9e5c33-5c0e-4d5a-9a59-7a2f0c1d2e3f';
      const meta = { collection_name: 'legacy', file_id: 'old', split_id: 2, source: 's3://x' };
      const put = await rawQdrant(target(), 'PUT', `/collections/${collection}/points?wait=true`, {
        points: [
          {
            id,
            vector: { 'text-dense': [0, 0, 1, 0] },
            payload: { id: 'haystack-id', content: 'legacy text', meta, blob: null },
          },
          { id: 42, vector: {}, payload: { content: 'no meta at all' } },
        ],
      });
      expect(put.status).toBe(200);
      const page = await index.scroll({}, { limit: 10 });
      expect(page.points).toEqual([{ id, content: 'legacy text', meta }]);
      expect(await index.count({ notIngestVersion: 'v1' })).toBe(2);
      expect(await index.deleteWhere({ collectionNames: ['legacy'], notIngestVersion: 'v1' })).toBe(1);
    });

    it('applies ordered writes in one request, in order, and stops at the first that fails', async () => {
      const { collection, index } = fresh();
      await index.ensureCollection();
      // A handle that does not know the dense size sends a wrong one; the server refuses it.
      const blind = openQdrant(target(), { collection });
      const p = (key: string, dense: number[]) => labelledPoint(collection, { key, dense });
      const [a, b, c] = [p('A', [1, 0, 0, 0]), p('B', [1, 0, 0]), p('C', [0, 1, 0, 0])];
      await expect(blind.ordered?.write([{ upsert: [a] }, { upsert: [b] }, { upsert: [c] }])).rejects.toThrow(
        /HTTP 400: .*[Dd]imension/,
      );
      // The operation before the failing one stays applied; none after it is.
      expect((await index.scroll({}, { limit: 10 })).points.map((x) => x.content)).toEqual(['document A']);
      await index.ordered?.write([{ upsert: [c] }, { delete: [{ fileId: 'doc-A' }] }]);
      expect((await index.scroll({}, { limit: 10 })).points.map((x) => x.content)).toEqual(['document C']);
    });

    it('writes a version that fits one request in one, and a file the server refuses fails alone', async () => {
      const { collection, index } = fresh();
      await index.ensureCollection();
      const log = pino({ level: 'silent' });
      const blind = openQdrant(target(), { collection });
      const version = (file: string, v: string, dense: number[]) =>
        [0, 1].map((split) => {
          const meta: ChunkMeta = {
            collection_name: 'alpha',
            collection_type: 'knowledge',
            file_id: file,
            ingest_version: v,
            split_id: split,
          };
          return { id: pointId(file, v, split), content: `${file} ${v} ${split}`, meta, dense };
        });
      const commit = (file: string, v: string, dense = [1, 0, 0, 0]) =>
        commitVersion(blind, { fileId: file, collectionName: 'alpha', version: v }, version(file, v, dense), {
          log,
          now: () => 1,
        });
      await Promise.all(['f1', 'f2', 'f3'].map((f) => commit(f, 'v1')));
      // The same turn: f2's new version has a dense size the collection refuses. The shared request
      // fails; each file then goes alone, and only f2 fails, its previous version kept.
      const outcomes = await Promise.allSettled([
        commit('f1', 'v2'),
        commit('f2', 'v2', [1, 0]),
        commit('f3', 'v2'),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const live = await index.scroll({ collectionNames: ['alpha'] }, { limit: 20 });
      expect(live.points.map((x) => x.content).sort()).toEqual([
        'f1 v2 0',
        'f1 v2 1',
        'f2 v1 0',
        'f2 v1 1',
        'f3 v2 0',
        'f3 v2 1',
      ]);
      expect(await index.count({ reserved: 'writing' })).toBe(0);
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      const records = await index.scroll({ reserved: 'committed' }, { limit: 10 });
      expect(records.points.map((r) => `${r.meta.file_id} ${r.meta.ingest_version}`).sort()).toEqual([
        'f1 v2',
        'f2 v1',
        'f3 v2',
      ]);
    });

    it('rejects wrong dense sizes and unfiltered deletes before sending anything', async () => {
      const { collection, index } = fresh();
      await index.ensureCollection();
      const p = labelledPoint(collection, { key: 'X', dense: [1, 2, 3] });
      await expect(index.upsert([p])).rejects.toThrow(
        'has 3 dimensions, but EMBEDDING_DIM (text-dense) is 4',
      );
      await expect(index.searchDense([1, 2], {}, 3)).rejects.toThrow('has 2 dimensions');
      await expect(index.deleteWhere({})).rejects.toThrow('needs a filter');
      expect(await index.count({})).toBe(0);
    });
  });
}
