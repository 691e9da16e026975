import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { startService } from '../../src/cli/serve.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { preloadEarly, startEarly } from '../../src/pool/pool-process.js';
import { IDLE_MS, type PoolSettings, WorkerPool } from '../../src/pool/worker-pool.js';
import { tempDir } from '../cli/helpers.js';
import { ManualClock } from '../helpers/clock.js';

/*
 * Idle workers: the ones beyond `warm` stop after `IDLE_MS`; the kept ones stay warm for the next
 * upload, unless a large document has grown them, when a fresh worker takes their place. A worker
 * started before its pool (`kilde ingest` starts one before it walks its files) is the first worker
 * of a pool of the same entry and heap limit; one started for another heap limit is stopped.
 */

const poolOf = (o: Partial<PoolSettings>, idleClock: ManualClock) =>
  new WorkerPool<IngestTasks>(
    {
      ...INGEST_POOL,
      size: 2,
      heapMb: 256,
      timeoutMs: 60_000,
      setup: {
        limits: DEFAULT_LIMITS,
        chunking: { settings: { mode: 'markdown', size: 60, overlap: 10 }, counter: 'approximate' },
      },
      ...o,
    },
    { log: pino({ level: 'silent' }), clock: new ManualClock(), idleClock },
  );

/** Chunking tasks of unknown size: each one is heavy, so two at once start both workers. */
const chunk = (pool: WorkerPool<IngestTasks>, text: string) => pool.run({ kind: 'chunk', docs: [{ text }] });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('idle workers', () => {
  it('keeps EXTRACTION_WARM_WORKERS running after a minute idle, stops the others, and runs the next task on a kept one', async () => {
    const idle = new ManualClock();
    const pool = poolOf({ warm: 1 }, idle);
    try {
      await Promise.all([chunk(pool, 'First text.'), chunk(pool, 'Second text.')]);
      const both = pool.pids;
      expect(both).toHaveLength(2);
      idle.advance(IDLE_MS - 1);
      expect(pool.pids).toEqual(both);
      idle.advance(1);
      const kept = pool.pids;
      expect(kept).toHaveLength(1);
      expect(both).toContain(kept[0]);
      expect(alive(kept[0]!)).toBe(true);
      // Long after, the kept worker is still the one that answers: no start on the way.
      idle.advance(10 * IDLE_MS);
      const [chunks] = await chunk(pool, 'After a quiet spell.');
      expect(chunks?.[0]?.content).toBe('After a quiet spell.');
      expect(pool.pids).toEqual(kept);
    } finally {
      await pool.close();
    }
  });

  it('with EXTRACTION_WARM_WORKERS=0 stops every worker after a minute idle; the next task starts one', async () => {
    const idle = new ManualClock();
    const pool = poolOf({ warm: 0 }, idle);
    try {
      await chunk(pool, 'Only text.');
      const [first] = pool.pids;
      expect(first).toBeDefined();
      idle.advance(IDLE_MS);
      expect(pool.pids).toEqual([]);
      const [chunks] = await chunk(pool, 'Started again.');
      expect(chunks?.[0]?.content).toBe('Started again.');
      expect(pool.pids).toHaveLength(1);
      expect(pool.pids).not.toContain(first);
    } finally {
      await pool.close();
    }
  });

  it('replaces a kept worker that has grown since its start by a fresh one while idle', async () => {
    const idle = new ManualClock();
    // Any growth counts here; by default a worker must hold 256 MiB more than at its start.
    const pool = poolOf({ warm: 1, recycleGrowthMb: 0 }, idle);
    try {
      await chunk(pool, 'word '.repeat(200_000));
      const [grown] = pool.pids;
      idle.advance(IDLE_MS);
      const [fresh] = pool.pids;
      expect(pool.pids).toHaveLength(1);
      expect(fresh).not.toBe(grown);
      // The fresh worker is the one the next task finds.
      const [chunks] = await chunk(pool, 'On the fresh worker.');
      expect(chunks?.[0]?.content).toBe('On the fresh worker.');
      expect(pool.pids).toEqual([fresh]);
    } finally {
      await pool.close();
    }
  });

  it('keeps a worker whose growth stays under the threshold', async () => {
    const idle = new ManualClock();
    const pool = poolOf({ warm: 1, recycleGrowthMb: 4096 }, idle);
    try {
      await chunk(pool, 'word '.repeat(200_000));
      const before = pool.pids;
      idle.advance(IDLE_MS);
      expect(pool.pids).toEqual(before);
    } finally {
      await pool.close();
    }
  });
});

describe('kept workers at start-up', () => {
  it('prewarm starts the kept workers before any task; none with EXTRACTION_WARM_WORKERS=0', async () => {
    const idle = new ManualClock();
    const kept = poolOf({ warm: 1 }, idle);
    const none = poolOf({ warm: 0 }, idle);
    try {
      kept.prewarm();
      none.prewarm();
      expect(kept.pids).toHaveLength(1);
      expect(none.pids).toEqual([]);
      const [started] = kept.pids;
      const [chunks] = await chunk(kept, 'The first task finds a worker.');
      expect(chunks?.[0]?.content).toBe('The first task finds a worker.');
      expect(kept.pids).toEqual([started]);
      // Called again (a second part, a restart of the listener): no second worker.
      kept.prewarm();
      expect(kept.pids).toEqual([started]);
    } finally {
      await Promise.all([kept.close(), none.close()]);
    }
  });

  it('startOne (`kilde ingest`): one worker before any task, kept or not, which the first task uses', async () => {
    const idle = new ManualClock();
    const pool = poolOf({ warm: 0 }, idle);
    try {
      pool.startOne(false);
      pool.startOne(true);
      expect(pool.pids).toHaveLength(1);
      const [started] = pool.pids;
      const [chunks] = await chunk(pool, 'The first task finds the started worker.');
      expect(chunks?.[0]?.content).toBe('The first task finds the started worker.');
      expect(pool.pids).toEqual([started]);
      // Not a kept worker: it stops once idle, as any other.
      idle.advance(IDLE_MS);
      expect(pool.pids).toEqual([]);
    } finally {
      await pool.close();
    }
  });

  it('`kilde serve ingest` starts its kept worker once it listens', async () => {
    const tmp = await tempDir('kilde-warm-serve-');
    const running = await startService('ingest', {
      API_KEY: 'k',
      KILDE_DATA_DIR: tmp.dir,
      EMBEDDING_PROVIDER: 'none',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'silent',
    });
    try {
      const part = running.parts.find((p) => p.name === 'ingest') as unknown as {
        pipeline(): { pool: WorkerPool<IngestTasks> };
      };
      expect(part.pipeline().pool.pids).toHaveLength(1);
    } finally {
      await running.app.close();
      await tmp.remove();
    }
  });
});

describe('a worker started early', () => {
  it('runs the first pool task of the same entry and heap limit, and no other process starts', async () => {
    const early = startEarly(INGEST_POOL.worker, 256);
    expect(early).toBeTypeOf('number');
    const pool = poolOf({ size: 1 }, new ManualClock());
    try {
      const out = await chunk(pool, 'One sentence here. Another one there.');
      expect(out[0]!.map((c) => c.content).join(' ')).toContain('Another one there.');
      expect(pool.pids).toEqual([early]);
    } finally {
      await pool.close();
    }
    expect(alive(early!)).toBe(false);
  });

  it('told to preload before its pool exists (a job with PDFs), it reads the first PDF as its first task', async () => {
    const early = startEarly(INGEST_POOL.worker, 256);
    preloadEarly();
    const pool = poolOf({ size: 1 }, new ManualClock());
    try {
      const pdf = fileURLToPath(new URL('../fixtures/documents/multi_page.pdf', import.meta.url));
      const read = await pool.run({
        kind: 'extract',
        file: { path: pdf, filename: 'multi_page.pdf' },
        engine: 'inprocess',
      });
      expect(read.content.text).toContain('Pre-Digital Era');
      expect(pool.pids).toEqual([early]);
    } finally {
      await pool.close();
    }
  });

  it('is stopped, not used, by a pool with another heap limit', async () => {
    const early = startEarly(INGEST_POOL.worker, 256);
    const pool = poolOf({ size: 1, heapMb: 320 }, new ManualClock());
    try {
      await chunk(pool, 'Some text.');
      expect(pool.pids).toHaveLength(1);
      expect(pool.pids).not.toContain(early);
      await expect.poll(() => alive(early!)).toBe(false);
    } finally {
      await pool.close();
    }
  });
});
