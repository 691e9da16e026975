import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { startEarly } from '../../src/pool/pool-process.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { ManualClock } from '../helpers/clock.js';

/*
 * A worker started before its pool (`kilde ingest` starts one before it walks its files): the first
 * pool of the same entry and heap limit runs its tasks on that process instead of starting another;
 * one started for another heap limit is stopped and not used.
 */

const poolOf = (heapMb: number) =>
  new WorkerPool<IngestTasks>(
    {
      ...INGEST_POOL,
      size: 1,
      heapMb,
      timeoutMs: 60_000,
      setup: {
        limits: DEFAULT_LIMITS,
        chunking: { settings: { mode: 'markdown', size: 60, overlap: 10 }, counter: 'approximate' },
      },
    },
    { log: pino({ level: 'silent' }), clock: new ManualClock() },
  );

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a worker started early', () => {
  it('runs the first pool task of the same entry and heap limit, and no other process starts', async () => {
    const early = startEarly(INGEST_POOL.worker, 256);
    expect(early).toBeTypeOf('number');
    const pool = poolOf(256);
    try {
      const out = await pool.run({
        kind: 'chunk',
        docs: [{ text: 'One sentence here. Another one there.' }],
      });
      expect(out[0]!.map((c) => c.content).join(' ')).toContain('Another one there.');
      expect(pool.pids).toEqual([early]);
    } finally {
      await pool.close();
    }
    expect(alive(early!)).toBe(false);
  });

  it('is stopped, not used, by a pool with another heap limit', async () => {
    const early = startEarly(INGEST_POOL.worker, 256);
    const pool = poolOf(320);
    try {
      await pool.run({ kind: 'chunk', docs: [{ text: 'Some text.' }] });
      expect(pool.pids).toHaveLength(1);
      expect(pool.pids).not.toContain(early);
      await expect.poll(() => alive(early!)).toBe(false);
    } finally {
      await pool.close();
    }
  });
});
