import type { Logger } from 'pino';
import type { Clock } from '../clock.js';

/*
 * What a worker pool (worker-pool.ts) is made with and what its callers pass per task: its size and
 * limits, the workers it keeps warm, its clocks, and a task's signal, libraries and size.
 */

export interface PoolSettings {
  /** Worker processes (`EXTRACTION_WORKERS`). */
  size: number;
  /** V8 old-generation heap of one worker, MiB (`EXTRACTION_MAX_HEAP_MB`). */
  heapMb: number;
  /** Wall time of one task once it runs (`EXTRACTION_TIMEOUT`). */
  timeoutMs: number;
  /**
   * The workers' entry module: it calls `serveTasks` (worker-runtime.ts) with the handlers of the
   * tasks this pool runs (src/ingest/pool-worker.ts, src/extract/pool-worker.ts).
   */
  worker: URL;
  /** Sent to every worker before its first task, for its handlers (the pool does not read it). */
  setup: unknown;
  /** The errors a caller gets when its worker had to go (they name the domain's settings). */
  errors: PoolErrors;
  /**
   * Workers kept running while idle (`EXTRACTION_WARM_WORKERS`, at most `size`), so that work after a
   * quiet spell does not wait for a worker's start; the others stop after `IDLE_MS` idle. Default 0.
   */
  warm?: number;
  /**
   * A kept worker that holds this many MiB more than when it started (a large document's leftovers)
   * is replaced by a fresh one once idle. Default `RECYCLE_GROWTH_MB` (pool-policy.ts).
   */
  recycleGrowthMb?: number;
  /**
   * The libraries (`RunOptions.affinity` names) a worker's preload loads (`prewarm`, `startOne`): a
   * PDF then goes to the worker that has PDFium. Default none.
   */
  preloads?: readonly string[];
}

/** The errors a task's caller gets when its worker had to go. */
export interface PoolErrors {
  /** The task ran past its time limit (`limit: 'timeout'`) or its worker out of heap (`'heap'`); `what` says by how much. */
  overLimit(what: string, limit: 'timeout' | 'heap'): Error;
  /** The worker stopped under the task for any other reason. */
  crashed(cause: Error | undefined): Error;
}

export interface PoolDeps {
  log: Logger;
  /** Times a running task's limit; tests pass a manual clock and advance it themselves. */
  clock?: Clock;
  /** Times how long a worker has been idle (`IDLE_MS`); tests pass a manual clock. Default the system clock. */
  idleClock?: Clock;
}

/** Idle workers beyond the kept ones (`PoolSettings.warm`) stop after this long. */
export const IDLE_MS = 60_000;

/** What a caller passes with one task (`WorkerPool.run`). */
export interface RunOptions {
  /** The caller going away: stops the task wherever it is. */
  signal?: AbortSignal | undefined;
  /**
   * The libraries the task will load (`pdf`, `docx`…): a free worker prefers a queued task whose
   * libraries it has loaded, or that no other worker has, so each library is loaded and warmed up
   * in one worker rather than in every one (docs/performance.md, "A large PDF on both cores, and
   * one worker per library").
   */
  affinity?: readonly string[] | undefined;
  /**
   * The work's size in bytes or characters (a file's bytes, the characters to chunk or analyse),
   * when the caller knows it. A task of known size with no `affinity` is *light*: up to
   * `MERGE.itemWeight` it may share a worker's turn with other queued light tasks. Every task's size,
   * at its library's rate (`MS_PER_MIB`), counts toward the backlog that starts a second worker
   * (`warranted`, pool-policy.ts); a task of unknown size starts a worker when none is free.
   */
  weight?: number | undefined;
}
