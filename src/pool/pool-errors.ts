import type { Logger } from 'pino';
import type { PoolErrors } from './pool-settings.js';

/*
 * What a pool task's caller gets when its worker had to go (worker-pool.ts): the task past its time
 * limit, the worker out of heap, or the worker gone for any other reason.
 */

/** The errors of tasks stopped at their time limit, with the item that was running (0 for a one-item task). */
const timedOut = new WeakMap<object, number>();

/** The error of a task stopped at its time limit of `seconds`, while item `item` of it ran. */
export function timedOutError(errors: PoolErrors, seconds: number, item: number): Error {
  const err = errors.overLimit(`processing took longer than ${seconds} s`, 'timeout');
  timedOut.set(err, item);
  return err;
}

/**
 * Which item of a task over many (`extract-many`) ran past its time limit, when `err` is that task's
 * time-out; undefined for any other error. The items before it had finished (their results were lost
 * with the worker), the ones after it had not started.
 */
export function timedOutItem(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null ? timedOut.get(err) : undefined;
}

/** Why a worker died under a task: out of heap (V8 says so on stderr), or anything else; logged. */
export function workerFailure(
  w: {
    stderr: string;
    heapMb: number;
    task: string;
    code: number | null;
    signal: NodeJS.Signals | null;
    err: Error | undefined;
  },
  errors: PoolErrors,
  log: Logger,
): Error {
  if (/heap out of memory|Reached heap limit/.test(w.stderr)) {
    log.warn({ task: w.task, heapMb: w.heapMb }, 'worker out of memory: worker replaced');
    return errors.overLimit(`processing needed more than ${w.heapMb} MiB of memory`, 'heap');
  }
  log.error(
    { err: w.err, task: w.task, exitCode: w.code, signal: w.signal, stderr: w.stderr.slice(-1000) },
    'worker stopped unexpectedly: worker replaced',
  );
  return errors.crashed(w.err);
}
