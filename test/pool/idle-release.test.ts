import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { ManualClock } from '../helpers/clock.js';

/*
 * A worker that a turn has left with a large heap (a long document chunked and analysed) gives the
 * memory back once idle (worker-runtime.ts, `idleRelease`), rather than holding it while its caller
 * writes the document's rows; the next task runs in the same worker as before.
 */

const pool = new WorkerPool<IngestTasks>(
  {
    ...INGEST_POOL,
    size: 1,
    heapMb: 512,
    timeoutMs: 120_000,
    setup: {
      limits: DEFAULT_LIMITS,
      chunking: { settings: { mode: 'markdown', size: 100, overlap: 10 }, counter: 'approximate' },
    },
  },
  { log: pino({ level: 'silent' }), clock: new ManualClock(), idleClock: new ManualClock() },
);
afterAll(() => pool.close());

/** The worker's resident memory now and at its peak (MiB), from the kernel. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

describe.skipIf(process.platform !== 'linux')('a worker after a large turn', () => {
  it('returns the memory the turn left once idle, and takes the next task', async () => {
    const paragraph = (i: number) =>
      `Section ${i}. The council reviewed the housing benefit appeal of district ${i % 97} and the school permit deadline.`;
    const text = Array.from({ length: 60_000 }, (_, i) => paragraph(i)).join('\n\n');
    const [chunks] = await pool
      .run({
        kind: 'chunk-lexical',
        docs: [{ input: { text }, languages: ['en'] }],
        fallback: 'english',
        sparse: true,
      })
      .then((out) => out.chunks);
    expect(chunks!.length).toBeGreaterThan(1000);
    const [pid] = pool.pids;
    // Polled, not timed: the release follows the turn in the worker, on its own event loop.
    await vi.waitFor(
      () => {
        const m = memory(pid!);
        expect(m.peak - m.rss).toBeGreaterThan(20);
      },
      { timeout: 5000, interval: 50 },
    );
    const [after] = await pool.run({ kind: 'chunk', docs: [{ text: 'A short text after.' }] });
    expect(after![0]!.content).toBe('A short text after.');
    expect(pool.pids).toEqual([pid]);
  });
});
