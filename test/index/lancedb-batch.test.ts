import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { IndexPoint } from '../../src/index/contract.js';
import { createLanceIndex } from '../../src/index/lancedb.js';
import type { VectorIndex } from '../../src/index/store.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { filePoints as points } from './file-points.js';

/** Group commit (src/index/lancedb-batch.ts): merged writes, per-caller results, failures kept apart. */

const log = pino({ level: 'silent' });
const newDir = tempDirs('kilde-lance-batch-');
const open: VectorIndex[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((i) => i.close()));
});

async function fresh(): Promise<{ index: VectorIndex; versions: () => Promise<number> }> {
  const dir = await newDir();
  // optimize would add versions of its own; keep it out of the commit counts.
  const index = await createLanceIndex(
    { uri: dir, collection: 'files', sparse: true, timeoutMs: 10_000 },
    { log },
    { optimizeEvery: 1_000_000, optimizeRows: 1_000_000 },
  );
  open.push(index);
  await index.ensureCollection();
  const db = await connect(dir);
  const versions = async () => {
    const table = await db.openTable('files');
    try {
      return await table.version();
    } finally {
      table.close();
    }
  };
  return { index, versions };
}

const files = Array.from({ length: 12 }, (_, i) => `file-${i}`);

describe('LanceDB group commit', () => {
  it('merges concurrent upserts of different files into few commits, every row written', async () => {
    const { index, versions } = await fresh();
    const before = await versions();
    await Promise.all(files.map((f) => index.upsert(points(f, 'v1', 3))));
    const commits = (await versions()) - before;
    // The first upsert runs alone; the eleven queued behind it share the next commit.
    expect(commits).toBeLessThanOrEqual(2);
    expect(await index.count({})).toBe(36);
    for (const f of files) expect(await index.count({ fileId: f })).toBe(3);
  });

  it('gives each concurrent delete its own count and commits nothing when nothing matches', async () => {
    const { index, versions } = await fresh();
    await Promise.all(files.map((f, i) => index.upsert(points(f, 'v1', i + 1))));
    const before = await versions();
    const misses = await Promise.all(files.map((f) => index.deleteWhere({ fileId: f, ingestVersion: 'v9' })));
    expect(misses).toEqual(files.map(() => 0));
    expect(await versions()).toBe(before);

    const deleted = await Promise.all(
      files.map((f) => index.deleteWhere({ fileId: f, collectionNames: ['c'], notIngestVersion: 'v2' })),
    );
    expect(deleted).toEqual(files.map((_, i) => i + 1));
    expect(await index.count({})).toBe(0);
    expect((await versions()) - before).toBeLessThanOrEqual(2);
  });

  it('attributes a row matched by two queued deletes to the earlier one, as one-by-one would', async () => {
    const { index } = await fresh();
    await index.upsert([...points('a', 'v1', 2), ...points('b', 'v1', 3)]);
    // The first delete occupies the writer; the next three queue up and merge.
    const results = await Promise.all([
      index.deleteWhere({ fileId: 'none' }),
      index.deleteWhere({ fileId: 'a' }),
      index.deleteWhere({ collectionNames: ['c'] }),
      index.deleteWhere({ fileId: 'b' }),
    ]);
    expect(results).toEqual([0, 2, 3, 0]);
    expect(await index.count({})).toBe(0);
  });

  it('keeps arrival order between queued upserts and deletes', async () => {
    const { index } = await fresh();
    const ops = [
      index.upsert(points('x', 'v1', 2)),
      index.deleteWhere({ fileId: 'x' }),
      index.upsert(points('y', 'v1', 2)),
      index.deleteWhere({ fileId: 'y' }),
      index.upsert(points('y', 'v2', 1)),
    ];
    const [, deletedX, , deletedY] = await Promise.all(ops);
    expect([deletedX, deletedY]).toEqual([2, 2]);
    expect(await index.count({ fileId: 'x' })).toBe(0);
    const left = await index.scroll({ fileId: 'y' }, { limit: 10 });
    expect(left.points.map((p) => p.meta.ingest_version)).toEqual(['v2']);
  });

  it('runs an upsert and a delete of different files in one batch, keeping each file right', async () => {
    const { index, versions } = await fresh();
    await Promise.all(files.map((f) => index.upsert(points(f, 'v1', 2))));
    const before = await versions();
    // The ingest pattern: new versions of some files written while others retire their old ones.
    const results = await Promise.all(
      files.map(
        (f, i): Promise<number | undefined> =>
          i % 2 === 0
            ? index.upsert(points(f, 'v2', 3)).then(() => undefined)
            : index.deleteWhere({ fileId: f, collectionNames: ['c'], notIngestVersion: 'v2' }),
      ),
    );
    expect(results.filter((r) => typeof r === 'number')).toEqual(
      files.filter((_, i) => i % 2 === 1).map(() => 2),
    );
    for (const [i, f] of files.entries()) {
      const page = await index.scroll({ fileId: f }, { limit: 10 });
      const seen = page.points.map((p) => p.meta.ingest_version).sort();
      expect(seen).toEqual(i % 2 === 0 ? ['v1', 'v1', 'v2', 'v2', 'v2'].sort() : []);
    }
    // Interleaved, yet merged: one commit for the first operation, then one delete + one merge.
    expect((await versions()) - before).toBeLessThanOrEqual(3);
  });

  it('fails only the upsert that Lance rejects; the ones merged with it are written', async () => {
    const { index } = await fresh();
    const broken: IndexPoint = { ...points('bad', 'v1', 1)[0]!, content: null as unknown as string };
    const results = await Promise.allSettled([
      index.upsert(points('first', 'v1', 1)),
      ...files.map((f) => index.upsert(points(f, 'v1', 2))),
      index.upsert([broken]),
      index.upsert(points('last', 'v1', 2)),
    ]);
    const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
    expect(rejected).toEqual([files.length + 1]);
    expect(await index.count({ fileId: 'bad' })).toBe(0);
    expect(await index.count({})).toBe(1 + files.length * 2 + 2);
  });
});
