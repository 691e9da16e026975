import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createLanceIndex, keepVersionsMs } from '../../src/index/lancedb.js';
import { ManualClock } from '../helpers/clock.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { filePoints } from './file-points.js';

/**
 * How long old LanceDB table versions are kept: optimize removes those older than twice the index
 * time-out, at least a minute (src/index/lancedb-options.ts, `keepVersionsMs`). Each optimize costs more the
 * more versions are kept (docs/performance.md, "Old versions and optimize").
 */

const log = pino({ level: 'silent' });
const newDir = tempDirs('kilde-lance-cleanup-');

/**
 * 30 re-ingests with an optimize every 10 commits, Kilde's clock `aheadMs` ahead of the versions'
 * own timestamps (LanceDB stamps them with the wall clock): how many versions are left.
 */
async function versionsLeft(timeoutMs: number, aheadMs: number): Promise<number> {
  const dir = await newDir();
  const clock = new ManualClock({ start: Date.now() + aheadMs });
  const index = await createLanceIndex(
    { uri: dir, collection: 'files', sparse: true, timeoutMs },
    { log },
    { optimizeEvery: 10, optimizeRows: 1_000_000, optimizeSpacing: 0, clock },
  );
  await index.ensureCollection();
  for (let i = 0; i < 30; i++) {
    await index.upsert(filePoints(`f${i % 3}`, `v${i}`, 2));
    await index.deleteWhere({ fileId: `f${i % 3}`, notIngestVersion: `v${i}` });
  }
  await index.close(); // waits for the queued optimize
  const db = await connect(dir);
  const table = await db.openTable('files');
  try {
    return (await table.listVersions()).length;
  } finally {
    table.close();
    db.close();
  }
}

describe('LanceDB old versions', () => {
  it('are kept twice the index time-out, at least a minute', () => {
    expect(keepVersionsMs(30_000)).toBe(60_000);
    expect(keepVersionsMs(5_000)).toBe(60_000);
    expect(keepVersionsMs(300_000)).toBe(600_000);
  });

  it('are removed by optimize once older than that, and kept while younger', async () => {
    // Two minutes on: past the one-minute window (time-out 30 s), so optimize leaves a few versions.
    const pruned = await versionsLeft(30_000, 120_000);
    // The same two minutes with a 5-minute time-out: a 10-minute window keeps them all (60+ commits).
    const kept = await versionsLeft(300_000, 120_000);
    expect(kept).toBeGreaterThan(60);
    expect(pruned).toBeLessThan(15);
  }, 60_000);
});
