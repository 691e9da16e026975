import { connect, type Table } from '@lancedb/lancedb';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createLanceIndex } from '../../src/index/lancedb.js';
import { FRESH_BUILD_MAX_FRAGMENTS } from '../../src/index/lancedb-maintenance.js';
import type { VectorIndex } from '../../src/index/store.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { filePoints } from './file-points.js';

/**
 * The settle of the local `kilde ingest` (src/index/lancedb-maintenance.ts): a fresh table's indexes
 * are built from its rows, a table already indexed is optimized; either way every row is then in the
 * full-text and scalar indexes and found by search.
 */

const log = pino({ level: 'silent' });
const newDir = tempDirs('kilde-lance-settle-');

async function open(dir: string): Promise<VectorIndex> {
  // Optimizes far apart: the writes below leave one pending, for the settle.
  const index = await createLanceIndex(
    { uri: dir, collection: 'files', sparse: true, timeoutMs: 10_000 },
    { log },
    { optimizeEvery: 1000, optimizeRows: 1_000_000 },
  );
  await index.ensureCollection();
  return index;
}

/** `files` files of three chunks, one commit each (merge-insert: no journal window). */
async function write(index: VectorIndex, from: number, files: number): Promise<void> {
  for (let f = from; f < from + files; f++) await index.upsert(filePoints(`file${f}`, 'v1', 3));
}

/** Each index of the table: its kind, and the rows it holds and lacks. */
async function indexes(table: Table) {
  const out: Record<string, { kind: string; indexed: number; unindexed: number }> = {};
  for (const i of await table.listIndices()) {
    const stats = await table.indexStats(i.name);
    out[i.columns.join(',')] = {
      kind: i.indexType,
      indexed: stats?.numIndexedRows ?? -1,
      unindexed: stats?.numUnindexedRows ?? -1,
    };
  }
  return out;
}

async function inspect(dir: string, check: (table: Table) => Promise<void>): Promise<void> {
  const db = await connect(dir);
  const table = await db.openTable('files');
  try {
    await check(table);
  } finally {
    table.close();
    db.close();
  }
}

function everyIndexHolds(rows: number) {
  const full = { indexed: rows, unindexed: 0 };
  return {
    lexical: { kind: 'FTS', ...full },
    id: { kind: 'BTree', ...full },
    collection_name: { kind: 'Bitmap', ...full },
    file_id: { kind: 'BTree', ...full },
    languages: { kind: 'LabelList', ...full },
  };
}

/** The files whose chunks a full-text search for their own name finds. */
async function foundByName(index: VectorIndex, files: number): Promise<number> {
  let found = 0;
  for (let f = 0; f < files; f++) {
    const hits = await index.searchLexical({ text: `file${f}` }, { collectionNames: ['c'] }, 10);
    if (hits.length === 3 && hits.every((h) => h.meta.file_id === `file${f}`)) found += 1;
  }
  return found;
}

describe('LanceDB settle', () => {
  it("builds a fresh table's indexes from its rows, then optimizes once they hold rows", async () => {
    const dir = await newDir();
    const index = await open(dir);
    await write(index, 0, 4);
    await inspect(dir, async (table) => {
      expect(Object.values(await indexes(table)).map((i) => i.indexed)).toEqual([0, 0, 0, 0, 0]);
    });

    expect(await index.settle?.()).toBe(true);
    await inspect(dir, async (table) => {
      expect(await indexes(table)).toEqual(everyIndexHolds(12));
      // Built, not compacted: one fragment per commit, rewritten by the next optimize.
      expect((await table.stats()).fragmentStats.numFragments).toBe(4);
    });
    expect(await foundByName(index, 4)).toBe(4);
    expect(await index.settle?.()).toBe(false);

    // Indexes that hold rows: the next settle folds the new ones in and compacts.
    await write(index, 4, 2);
    expect(await index.settle?.()).toBe(true);
    await inspect(dir, async (table) => {
      expect(await indexes(table)).toEqual(everyIndexHolds(18));
      // LanceDB compacts the indexed fragments and the new ones apart: 6 → 2, as after an optimize.
      expect((await table.stats()).fragmentStats.numFragments).toBe(2);
    });
    expect(await foundByName(index, 6)).toBe(6);
    await index.close();
  });

  it('optimizes a fresh table of more fragments than the bound, every row indexed', async () => {
    const dir = await newDir();
    const index = await open(dir);
    const files = FRESH_BUILD_MAX_FRAGMENTS + 1;
    await write(index, 0, files);
    expect(await index.settle?.()).toBe(true);
    await inspect(dir, async (table) => {
      expect(await indexes(table)).toEqual(everyIndexHolds(files * 3));
      expect((await table.stats()).fragmentStats.numFragments).toBe(1);
    });
    expect(await foundByName(index, files)).toBe(files);
    await index.close();
  });
});
