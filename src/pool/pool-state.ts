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
  /** The libraries of the tasks it has run (loaded in this process already). */
  warm: Set<string>;
}
