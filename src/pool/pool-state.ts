import type { ChildProcess } from 'node:child_process';
import type { Timer } from '../clock.js';
import type { Queued } from './pool-policy.js';

/** What the worker pool (worker-pool.ts) keeps for each task it was given and each worker it runs. */

export interface Job extends Queued {
  id: number;
  input: { kind: string };
  signal: AbortSignal | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** The item running now, in a task over many (e.g. extraction's `extract-many`). */
  item?: number;
  settled?: true;
  /** How often a later task was started before this one (see `#pick`). */
  passed: number;
}

export interface Worker {
  child: ChildProcess;
  /** The tasks of its turn not yet answered, in the order it runs them (one, or several merged). */
  turn: Job[];
  /** Whether the turn holds tasks of several callers. */
  merged: boolean;
  /** The task running now (from its `started` message) and its time limit. */
  current?: Job | undefined;
  deadline?: Timer | undefined;
  idle?: Timer | undefined;
  /** Its resident memory and that at its start, bytes, as of its last turn (`FromWorker`). */
  memory?: { rss: number; startRss: number } | undefined;
  stderr: string;
  /** The libraries of the tasks it has run and of its preload (loaded in this process already). */
  warm: Set<string>;
  /** Tasks handed to it so far, and its turn's estimated ms (pool-policy.ts, `estimateMs`). */
  tasks: number;
  turnMs: number;
}

/** What `WorkerPool.stats` tells: workers started so far; each one running, its libraries and tasks run. */
export interface PoolStats {
  started: number;
  workers: Array<{ pid: number | undefined; libraries: string[]; tasks: number }>;
}
