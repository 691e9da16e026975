import { connect, Index } from '@lancedb/lancedb';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/eval/significance.js';
import { type ChunkMeta, DENSE_VECTOR, type IndexPoint, pointId } from '../../src/index/contract.js';
import { createLanceIndex } from '../../src/index/lancedb.js';
import { DENSE_COLUMN } from '../../src/index/lancedb-rows.js';
import { isDenseIndex } from '../../src/index/lancedb-vector-index.js';
import { logSink } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/**
 * LanceDB (0.37–0.39) fails every `optimize()` of a table whose dense index has grown in segments
 * over a column whose name needs quoting ("vector column `text-dense` not found in batch"), which
 * stops compaction and the full-text and vector index updates for good. Kilde's LanceDB column is
 * therefore `text_dense` (the contract's name, `text-dense`, is what the collection reports), and a
 * table written by an earlier Kilde has its column renamed when it is opened.
 */
const DIM = 16;
const newDir = tempDirs('kilde-lance-dense-');

/** The same vector for the same `n`, so a point can be looked up by its own vector. */
const vector = (n: number) => {
  const rand = mulberry32(n + 1);
  return Array.from({ length: DIM }, () => rand() - 0.5);
};
function point(n: number): IndexPoint {
  const meta: ChunkMeta = {
    collection_name: n % 2 === 0 ? 'even' : 'odd',
    collection_type: 'knowledge',
    file_id: `f${Math.floor(n / 20)}`,
    ingest_version: 'v1',
    split_id: n % 20,
  };
  return { id: pointId(meta.file_id, 'v1', meta.split_id), content: `chunk ${n}`, meta, dense: vector(n) };
}

async function open(dir: string) {
  const logs = logSink();
  const index = await createLanceIndex(
    {
      uri: dir,
      collection: 'ingestion_files',
      denseDim: DIM,
      sparse: true,
      timeoutMs: 30_000,
      // The exact index from 5,000 rows, as by default; optimizes only when settled.
      vectorIndex: { minRows: 5_000, annMinRows: 1_000_000 },
    },
    { log: pino({ level: 'debug' }, logs.stream) },
    { optimizeEvery: 1_000_000, optimizeSpacing: 0, clock: new ManualClock() },
  );
  await index.ensureCollection();
  return { index, logs };
}

/** `n` points from `from`, written 1000 at a time (one commit each). */
async function write(index: Awaited<ReturnType<typeof open>>['index'], from: number, n: number) {
  for (let i = from; i < from + n; i += 1000) {
    await index.upsert(Array.from({ length: Math.min(1000, from + n - i) }, (_, k) => point(i + k)));
  }
}

async function columnsAndIndexes(dir: string) {
  const db = await connect(dir);
  const table = await db.openTable('ingestion_files');
  const columns = (await table.schema()).fields.map((f) => f.name);
  const dense = (await table.listIndices()).filter(isDenseIndex);
  const stats = dense[0] ? await table.indexStats(dense[0].name) : undefined;
  table.close();
  db.close();
  return { columns, dense, unindexed: stats?.numUnindexedRows };
}

describe('the LanceDB dense column', () => {
  it('is text_dense in the table and text-dense in what the collection reports', async () => {
    const dir = await newDir();
    const { index } = await open(dir);
    await write(index, 0, 10);
    expect(await index.describe()).toMatchObject({ denseSize: DIM, vectorNames: [DENSE_VECTOR] });
    await index.close();
    const { columns } = await columnsAndIndexes(dir);
    expect(DENSE_COLUMN).toBe('text_dense');
    expect(columns).toContain('text_dense');
    expect(columns).not.toContain('text-dense');
  });

  it('keeps optimizing through rounds of writes with the exact index (rows folded in, nothing left over)', async () => {
    const dir = await newDir();
    const { index, logs } = await open(dir);
    await write(index, 0, 10_000);
    await index.settle?.(); // the exact index is built
    let next = 10_000;
    // The rounds after which LanceDB failed on the quoted column: 5,500 rows, then 8,000.
    for (const n of [5_500, 8_000, 500]) {
      await write(index, next, n);
      next += n;
      await expect(index.settle?.()).resolves.toBe(true);
    }
    expect(logs.lines.filter((l) => /failed/.test(String(l.msg)))).toEqual([]);
    const probe = point(next - 2);
    const hits = await index.searchDense(probe.dense as number[], { collectionNames: ['even'] }, 1);
    expect(hits[0]?.id).toBe(probe.id);
    await index.close();
    const { dense, unindexed } = await columnsAndIndexes(dir);
    expect(dense).toHaveLength(1);
    expect(unindexed).toBe(0);
  });

  it('is renamed from text-dense in a table an earlier Kilde wrote, its index and rows kept', async () => {
    const dir = await newDir();
    const first = await open(dir);
    await write(first.index, 0, 6_000);
    await first.index.close();
    // The layout before: the contract's name as the column, with an exact index over it.
    {
      const db = await connect(dir);
      const table = await db.openTable('ingestion_files');
      for (const i of (await table.listIndices()).filter(isDenseIndex)) await table.dropIndex(i.name);
      await table.alterColumns([{ path: DENSE_COLUMN, rename: 'text-dense' }]);
      await table.createIndex('text-dense', {
        config: Index.ivfFlat({ distanceType: 'cosine', numPartitions: 1 }),
        name: 'text_dense_flat_6000',
      });
      table.close();
      db.close();
    }
    expect((await columnsAndIndexes(dir)).columns).toContain('text-dense');

    const { index, logs } = await open(dir);
    expect(logs.lines.find((l) => l.msg === 'renamed the dense column')).toMatchObject({
      from: 'text-dense',
      to: 'text_dense',
    });
    const after = await columnsAndIndexes(dir);
    expect(after.columns).toContain('text_dense');
    expect(after.columns).not.toContain('text-dense');
    expect(after.dense.map((i) => i.name)).toEqual(['text_dense_flat_6000']);
    const probe = point(4_001);
    const hits = await index.searchDense(probe.dense as number[], { collectionNames: ['odd'] }, 1);
    expect(hits[0]?.id).toBe(probe.id);
    let next = 6_000;
    for (const n of [5_500, 8_000]) {
      await write(index, next, n);
      next += n;
      await expect(index.settle?.()).resolves.toBe(true);
    }
    await index.close();
    expect((await columnsAndIndexes(dir)).unindexed).toBe(0);
  });
});
