import { connect, VectorQuery } from '@lancedb/lancedb';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { retrieveSchema } from '../../src/config/retrieve.js';
import { mulberry32 } from '../../src/eval/significance.js';
import { type ChunkMeta, type IndexPoint, pointId } from '../../src/index/contract.js';
import { createLanceIndex, type LanceIndexOptions } from '../../src/index/lancedb.js';
import type { LanceCacheMb } from '../../src/index/lancedb-cache.js';
import {
  denseIndexBytes,
  isDenseIndex,
  type VectorIndexSettings,
} from '../../src/index/lancedb-vector-index.js';
import { indexSettingsFrom } from '../../src/index/settings-from-config.js';
import type { VectorIndex } from '../../src/index/store.js';
import { logSink, testConfig } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/**
 * The dense vector index of the LanceDB adapter: built past a threshold, in the background, exact
 * (IVF-Flat) up to `annMinRows` and approximate (HNSW-SQ) past it, tenants exact either way.
 */
const DIM = 16;
const newDir = tempDirs('kilde-lance-vidx-');
const open: VectorIndex[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((i) => i.close()));
});

const rand = mulberry32(11);
/** Unit vectors around one of a few directions, as embeddings of related texts are. */
function vector(centre: number): number[] {
  const v = Array.from({ length: DIM }, (_, d) => (d === centre ? 1 : 0) + (rand() - 0.5) * 0.6);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function point(tenant: string, n: number, dense: number[]): IndexPoint {
  const meta: ChunkMeta = {
    collection_name: tenant,
    collection_type: 'knowledge',
    file_id: `${tenant}-${Math.floor(n / 50)}`,
    ingest_version: 'v1',
    split_id: n % 50,
  };
  return { id: pointId(meta.file_id, 'v1', meta.split_id), content: `${tenant} chunk ${n}`, meta, dense };
}

async function lance(
  vectorIndex: Partial<VectorIndexSettings>,
  options: LanceIndexOptions = {},
  existing?: string,
  cacheMb?: LanceCacheMb,
) {
  const dir = existing ?? (await newDir());
  const logs = logSink();
  const index = await createLanceIndex(
    {
      uri: dir,
      collection: 'ingestion_files',
      denseDim: DIM,
      sparse: true,
      timeoutMs: 30_000,
      vectorIndex,
      ...(cacheMb ? { cacheMb } : {}),
    },
    { log: pino({ level: 'debug' }, logs.stream) },
    // Optimize after every commit, unspaced (a manual clock that never moves): each write can start a build.
    { optimizeEvery: 1, optimizeSpacing: 0, clock: new ManualClock(), ...options },
  );
  open.push(index);
  await index.ensureCollection();
  return { index, dir, logs };
}

async function denseIndices(dir: string) {
  const db = await connect(dir);
  const table = await db.openTable('ingestion_files');
  const found = (await table.listIndices()).filter(isDenseIndex);
  table.close();
  db.close();
  return found.map((i) => i.name);
}

async function denseIndexTypes(dir: string) {
  const db = await connect(dir);
  const table = await db.openTable('ingestion_files');
  const found = (await table.listIndices()).filter(isDenseIndex);
  table.close();
  db.close();
  return found.map((i) => i.indexType);
}

/** Settings that make the first index built the approximate one. */
const ann = (minRows: number): Partial<VectorIndexSettings> => ({ minRows, annMinRows: minRows });

const big = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => point('big', from + i, vector(i % 4)));

describe('LanceDB dense vector index', () => {
  it('is built in the background once the table passes the threshold, and not before: the exact one', async () => {
    const first = await lance({ minRows: 600 });
    await first.index.upsert(big(0, 500));
    await first.index.close(); // waits for the optimize and any build it started
    expect(await denseIndices(first.dir)).toEqual([]);
    expect(first.logs.lines.filter((l) => l.msg === 'building the dense vector index')).toEqual([]);

    const second = await lance({ minRows: 600 }, {}, first.dir);
    await second.index.upsert(big(500, 200));
    await second.index.close();
    // Below `annMinRows` (default 200,000): the exact index, every vector as it is.
    expect(await denseIndices(first.dir)).toEqual(['text_dense_flat_700']);
    expect(await denseIndexTypes(first.dir)).toEqual(['IvfFlat']);
    expect(second.logs.lines.find((l) => l.msg === 'dense vector index built')).toMatchObject({
      rows: 700,
      kind: 'exact',
    });
    // 700 × 16 × 4 bytes: far inside the default index cache.
    expect(second.logs.lines.filter((l) => l.level === 40)).toEqual([]);
  });

  it('warns once built when the index takes most of LANCEDB_INDEX_CACHE_MB, and still answers', async () => {
    expect(denseIndexBytes('exact', 700, DIM)).toBe(44_800);
    // A 40 KiB bound (whole MiB in the configuration; any size here).
    const { index, logs } = await lance({ minRows: 600 }, {}, undefined, { index: 40 / 1024, metadata: 1 });
    await index.upsert(big(0, 700));
    await index.close();
    const warned = logs.lines.filter((l) => l.level === 40);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ kind: 'exact', rows: 700, indexMb: 1, indexCacheMb: 40 / 1024 });
    expect(String(warned[0]?.msg)).toMatch(/LANCEDB_INDEX_CACHE_MB/);
  });

  it('answers exactly what a scan answers through the exact index', async () => {
    const writer = await lance({ minRows: 600 });
    await writer.index.upsert(big(0, 700));
    await writer.index.close();
    expect(await denseIndices(writer.dir)).toEqual(['text_dense_flat_700']);
    const { index } = await lance({ minRows: 600 }, {}, writer.dir);
    const db = await connect(writer.dir);
    const table = await db.openTable('ingestion_files');
    for (const centre of [0, 1, 2, 3, 5]) {
      const query = vector(centre);
      const scan: { id: string }[] = await table
        .vectorSearch(query)
        .bypassVectorIndex()
        .column('text_dense')
        .distanceType('cosine')
        .where("collection_name = 'big'")
        .select(['id'])
        .limit(10)
        .toArray();
      const hits = await index.searchDense(query, { collectionNames: ['big'] }, 10);
      expect(hits.map((h) => h.id)).toEqual(scan.map((r) => r.id));
    }
    table.close();
    db.close();
  });

  it('replaces the exact index by the approximate one once the table reaches annMinRows', async () => {
    const settings = { minRows: 100, annMinRows: 300 };
    const first = await lance(settings);
    await first.index.upsert(big(0, 100));
    await first.index.close();
    expect(await denseIndices(first.dir)).toEqual(['text_dense_flat_100']);
    // Growing below annMinRows: the exact index is kept, new rows folded into it (no retraining).
    const grown = await lance(settings, {}, first.dir);
    await grown.index.upsert(big(100, 150));
    await grown.index.close();
    expect(await denseIndices(first.dir)).toEqual(['text_dense_flat_100']);
    const more = await lance(settings, {}, first.dir);
    await more.index.upsert(big(250, 50));
    await more.index.close();
    expect(await denseIndices(first.dir)).toEqual(['text_dense_idx_300']);
    expect(await denseIndexTypes(first.dir)).toEqual(['IvfHnswSq']);
    expect(more.logs.lines.find((l) => l.msg === 'building the dense vector index')).toMatchObject({
      rows: 300,
      kind: 'ann',
      replacing: 'exact',
      builtOn: 100,
    });
    expect(more.logs.lines.filter((l) => l.level === 40)).toEqual([]);
  });

  it.each([
    ['exact', { minRows: 600 }, 'text_dense_flat_706'],
    ['approximate', ann(600), 'text_dense_idx_706'],
    ['approximate, refined', { ...ann(600), refine: 5 }, 'text_dense_idx_706'],
  ] as const)(
    'keeps tenant filtering exact with the %s index: no other tenant, and a small tenant still gets k hits',
    async (_, settings, name) => {
      const writer = await lance(settings);
      // The small tenant's vectors all point away from the query: with the filter applied after the
      // graph search, it would get nothing.
      const small = Array.from({ length: 6 }, (_, i) => point('small', i, vector(8)));
      await writer.index.upsert([...big(0, 700), ...small]);
      await writer.index.close();
      expect(await denseIndices(writer.dir)).toEqual([name]);

      const { index } = await lance(settings, {}, writer.dir);
      const query = vector(0);
      const smallHits = await index.searchDense(query, { collectionNames: ['small'] }, 5);
      expect(smallHits).toHaveLength(5);
      expect(smallHits.every((h) => h.meta.collection_name === 'small')).toBe(true);
      const bigHits = await index.searchDense(query, { collectionNames: ['big'] }, 10);
      expect(bigHits).toHaveLength(10);
      expect(bigHits.every((h) => h.meta.collection_name === 'big')).toBe(true);
      // Both tenants: the nearest rows are the big tenant's.
      const both = await index.searchDense(query, { collectionNames: ['big', 'small'] }, 10);
      expect(both.every((h) => h.meta.collection_name === 'big')).toBe(true);
      expect(await index.searchDense(query, { collectionNames: ['nobody'] }, 5)).toEqual([]);
      // More rows than `ef` (100) keeps candidates, and, refined, more than ef / refine: ef is raised
      // to what the query needs (LanceDB would refuse "ef must be greater than or equal to k").
      const many = await index.searchDense(query, { collectionNames: ['big'] }, 200);
      expect(many).toHaveLength(200);
      expect(many.every((h) => h.meta.collection_name === 'big')).toBe(true);
      expect(new Set(many.map((h) => h.id)).size).toBe(200);
    },
  );

  it('never holds up writes: rows written while the build runs are stored and searched', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let started!: () => void;
    const buildStarted = new Promise<void>((r) => {
      started = r;
    });
    const events: string[] = [];
    const { index, dir } = await lance(ann(600), {
      onVectorIndexBuild: () => {
        events.push('build started');
        started();
        return held;
      },
    });
    await index.upsert(big(0, 700));
    await buildStarted;
    // The build is held before training; writes and searches go on regardless.
    for (let n = 0; n < 3; n++) {
      await index.upsert([point('late', n, vector(2))]);
      events.push(`write ${n} done`);
    }
    const late = await index.searchDense(vector(2), { collectionNames: ['late'] }, 5);
    expect(late.map((h) => h.content).sort()).toEqual(['late chunk 0', 'late chunk 1', 'late chunk 2']);
    events.push('build released');
    release();
    await index.close();
    expect(events).toEqual([
      'build started',
      'write 0 done',
      'write 1 done',
      'write 2 done',
      'build released',
    ]);
    // The build counted the rows there when it started; the writes that went past it are kept.
    expect(await denseIndices(dir)).toEqual(['text_dense_idx_700']);
    const db = await connect(dir);
    const table = await db.openTable('ingestion_files');
    expect(await table.countRows("collection_name = 'late'")).toBe(3);
    table.close();
    db.close();
  });

  it('settles before a process exits: the pending optimize runs, the due index is built, rows all indexed', async () => {
    // Optimizes far apart (every 1,000 commits): a short run of writes leaves one pending.
    const settings = { minRows: 100 };
    const { index, dir, logs } = await lance(settings, { optimizeEvery: 1000, optimizeRows: 1_000_000 });
    await index.upsert(big(0, 60));
    await index.upsert(big(60, 60));
    const db = await connect(dir);
    const before = await db.openTable('ingestion_files');
    expect((await before.listIndices()).filter(isDenseIndex)).toEqual([]);
    before.close();
    expect(await index.settle?.()).toBe(true);
    expect(await denseIndices(dir)).toEqual(['text_dense_flat_120']);
    const table = await db.openTable('ingestion_files');
    const fts = (await table.listIndices()).find((i) => i.indexType === 'FTS');
    expect(fts).toBeDefined();
    expect(await table.indexStats(fts!.name)).toMatchObject({ numUnindexedRows: 0 });
    expect(await table.indexStats('text_dense_flat_120')).toMatchObject({
      numIndexedRows: 120,
      numUnindexedRows: 0,
    });
    // Nothing written since: nothing to do.
    expect(await index.settle?.()).toBe(false);
    // Rows written after the index: folded in by the next settle, not left to a later writer.
    await index.upsert(big(120, 30));
    expect(await index.settle?.()).toBe(true);
    const after = await db.openTable('ingestion_files');
    expect(await after.indexStats('text_dense_flat_120')).toMatchObject({
      numIndexedRows: 150,
      numUnindexedRows: 0,
    });
    expect(await after.indexStats(fts!.name)).toMatchObject({ numUnindexedRows: 0 });
    after.close();
    table.close();
    db.close();
    expect(logs.lines.filter((l) => l.level === 40)).toEqual([]);
  });

  it('trains the approximate index again, replacing it, once the table has grown fourfold', async () => {
    const first = await lance(ann(100));
    await first.index.upsert(big(0, 100));
    await first.index.close();
    expect(await denseIndices(first.dir)).toEqual(['text_dense_idx_100']);
    // Below 4× the rows trained on: optimize folds the new rows into the index as they are.
    const grown = await lance(ann(100), {}, first.dir);
    await grown.index.upsert(big(100, 200));
    await grown.index.close();
    expect(await denseIndices(first.dir)).toEqual(['text_dense_idx_100']);
    expect(grown.logs.lines.filter((l) => l.level === 40)).toEqual([]);
    const db = await connect(first.dir);
    const table = await db.openTable('ingestion_files');
    const stats = await table.indexStats('text_dense_idx_100');
    expect(stats).toMatchObject({ numIndexedRows: 300, numUnindexedRows: 0 });
    table.close();
    db.close();
    const more = await lance(ann(100), {}, first.dir);
    await more.index.upsert(big(300, 100));
    await more.index.close();
    expect(await denseIndices(first.dir)).toEqual(['text_dense_idx_400']);
    expect(more.logs.lines.filter((l) => l.level === 40)).toEqual([]);
  });

  it('re-ranks by the refine factor only over the approximate index, whose vectors are quantized', async () => {
    const refineFactor = vi.spyOn(VectorQuery.prototype, 'refineFactor');
    try {
      const settings = { minRows: 100, annMinRows: 300, refine: 3 };
      const writer = await lance(settings);
      await writer.index.upsert(big(0, 100));
      await writer.index.close();
      expect(await denseIndices(writer.dir)).toEqual(['text_dense_flat_100']);
      // A fresh clock each time: the index kind is looked up once per 10 s of it.
      const exact = await lance(settings, {}, writer.dir);
      expect(await exact.index.searchDense(vector(1), { collectionNames: ['big'] }, 5)).toHaveLength(5);
      expect(refineFactor).not.toHaveBeenCalled();
      await exact.index.upsert(big(100, 200));
      await exact.index.close();
      expect(await denseIndices(writer.dir)).toEqual(['text_dense_idx_300']);
      const approx = await lance(settings, {}, writer.dir);
      expect(await approx.index.searchDense(vector(1), { collectionNames: ['big'] }, 5)).toHaveLength(5);
      expect(refineFactor.mock.calls).toEqual([[3]]);
    } finally {
      refineFactor.mockRestore();
    }
  });

  it('reads its settings from the LANCEDB_VECTOR_INDEX_* variables, and refuses bad ones', () => {
    const base = { EMBEDDING_PROVIDER: 'none' };
    const config = testConfig(retrieveSchema, {
      ...base,
      LANCEDB_VECTOR_INDEX_MIN_ROWS: '1000',
      LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS: '9000',
      LANCEDB_VECTOR_INDEX_EF: '300',
      LANCEDB_VECTOR_INDEX_REFINE: '4',
    });
    expect(indexSettingsFrom(config, false).vectorIndex).toEqual({
      minRows: 1000,
      annMinRows: 9000,
      ef: 300,
      refine: 4,
    });
    expect(() => testConfig(retrieveSchema, { ...base, LANCEDB_VECTOR_INDEX_REFINE: '-1' })).toThrow(
      /LANCEDB_VECTOR_INDEX_REFINE/,
    );
    expect(() => testConfig(retrieveSchema, { ...base, LANCEDB_VECTOR_INDEX_EF: '0' })).toThrow(
      /LANCEDB_VECTOR_INDEX_EF/,
    );
  });
});
