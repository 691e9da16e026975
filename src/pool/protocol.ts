import type { SerialisedError } from '../errors.js';

/*
 * What a pool (worker-pool.ts) and its worker processes (worker-runtime.ts) say to each other. The
 * pool knows tasks only by `kind`: which tasks there are, what they take and what they answer is the
 * business of the domain that defines them (src/extract/pool-tasks.ts, src/chunk/pool-task.ts,
 * src/embed/bm25/pool-task.ts).
 */

/** The tasks a pool runs, by kind: what each takes (besides its `kind`) and what it answers. */
export type TaskMap = Record<string, { input: object; output: unknown }>;

/** One task of `T` as the pool is given it: its input with its `kind`. */
export type TaskInput<T extends TaskMap> = {
  [K in keyof T & string]: T[K]['input'] & { kind: K };
}[keyof T & string];

/** A task's answer. KildeErrors do not survive the process boundary as such; they travel as data. */
export type TaskResult<O> = { ok: true; value: O } | { ok: false; error: SerialisedError };

/**
 * What the pool sends a worker process: its setup once (the domain's, opaque to the pool), then one
 * turn at a time: one task, or several callers' queued small tasks merged (worker-pool.ts, `MERGE`),
 * run one after another.
 */
export type ToWorker =
  | { type: 'setup'; setup: unknown }
  /** A worker started ahead of any task (`prewarm`): load what most tasks need now. */
  | { type: 'preload' }
  | { type: 'tasks'; tasks: Array<{ id: number; input: { kind: string } }> };

/**
 * What a worker answers, for each task of a turn: that the task has started (its time limit runs
 * from then, not from when it was queued), then its result. A task over many items says when each
 * item after the first starts: the time limit runs again from there, per item.
 */
export type FromWorker =
  | { type: 'started'; id: number; item?: number }
  | {
      type: 'result';
      id: number;
      result: TaskResult<unknown>;
      /** With a turn's last result: the worker's resident memory now and at its start, bytes. */
      memory?: { rss: number; startRss: number };
    };
