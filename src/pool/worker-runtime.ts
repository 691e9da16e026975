import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { KildeError, type SerialisedError } from '../errors.js';
import type { FromWorker, TaskMap, TaskResult, ToWorker } from './protocol.js';

/*
 * The loop of every worker process of a pool (worker-pool.ts): it takes its setup, then one turn at
 * a time (one task, or several callers' small tasks merged): for each task it first says it has
 * started (the caller's time limit runs from then, not from when it was queued), then runs it in this
 * process, where a runaway input can only exhaust this process's heap or time. It ends with the pool
 * (its IPC channel closing). What each task does is the domain's: a worker entry (e.g.
 * src/ingest/pool-worker.ts) calls `serveTasks` with its handlers.
 */

/** What a handler is given besides its input. */
export interface TaskContext<S> {
  /** The pool's setup (its first message); throws when a task arrives before it. */
  setup(): S;
  /** A task over many items says when each item after the first starts. */
  started(item: number): void;
}

/** A worker's handler of each kind of task. */
export type TaskHandlers<T extends TaskMap, S> = {
  [K in keyof T & string]: (
    input: T[K]['input'] & { kind: K },
    ctx: TaskContext<S>,
  ) => Promise<T[K]['output']> | T[K]['output'];
};

/** `fn`'s answer as a task result: a failure as data (a KildeError with its code and status). */
export async function settle<O>(fn: () => Promise<O> | O): Promise<TaskResult<O>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    return { ok: false, error: serialiseError(err) };
  }
}

function serialiseError(err: unknown): SerialisedError {
  if (err instanceof KildeError) return { code: err.code, status: err.statusCode, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'INTERNAL', status: 500, message: message.split('\n')[0] ?? '' };
}

/** Serves the pool's messages in this process with `handlers`; `preload` runs on the pool's `preload`. */
export function serveTasks<T extends TaskMap, S>(o: {
  handlers: TaskHandlers<T, S>;
  preload?: (setup: S | undefined) => void;
}): void {
  /** This process's resident memory once its modules are loaded: what a fresh worker holds. */
  const START_RSS = process.memoryUsage.rss();
  let setup: S | undefined;
  const send = (msg: FromWorker): void => {
    process.send?.(msg);
  };
  const setupOf = (): S => {
    if (setup === undefined) throw new Error('a task arrived before the worker was set up');
    return setup;
  };

  /** `started(item)`: a task over many items says when each item after the first starts. */
  const run = (input: { kind: string }, started: (item: number) => void) =>
    settle(() => {
      const handler = (o.handlers as Record<string, TaskHandlers<TaskMap, S>[string]>)[input.kind];
      if (!handler) throw new Error(`this worker has no task ${JSON.stringify(input.kind)}`);
      return handler(input, { setup: setupOf, started });
    });

  /**
   * A turn's tasks one after another, each answered as soon as it is done; the last answer carries the
   * worker's memory (the pool replaces a kept idle worker that has grown).
   */
  async function runTurn(tasks: Array<{ id: number; input: { kind: string } }>): Promise<void> {
    for (const [k, { id, input }] of tasks.entries()) {
      send({ type: 'started', id });
      const result = await run(input, (item) => send({ type: 'started', id, item }));
      const last = k === tasks.length - 1;
      send({
        type: 'result',
        id,
        result,
        ...(last ? { memory: { rss: process.memoryUsage.rss(), startRss: START_RSS } } : {}),
      });
    }
  }
  const release = idleRelease();

  // Profiled (`--cpu-prof`, passed on by the pool): the pool's SIGTERM ends this process through
  // `exit`, so the profile is written. Only then: a handler cannot run while a task holds the thread.
  if (process.execArgv.some((a) => a.startsWith('--cpu-prof'))) process.on('SIGTERM', () => process.exit(0));

  process.on('message', (msg: ToWorker) => {
    if (msg.type === 'setup') {
      setup = msg.setup as S;
      return;
    }
    if (msg.type === 'preload') {
      o.preload?.(setup);
      return;
    }
    release.cancel();
    // Once the turn's answers are on their way and its inputs out of scope, a heap it left large is
    // given back unless another turn follows at once.
    void runTurn(msg.tasks).then(release.schedule);
  });
  process.on('disconnect', () => process.exit(0));
}

/** A turn that leaves this much more heap in use than the last release kept is followed by one. */
export const RELEASE_GROWTH_BYTES = 32 * 2 ** 20;
/**
 * How long a worker stays idle before it releases: a task the pool had queued behind the turn (the
 * next segment group of a large document) arrives first and cancels it, so the release (≈0.09 s of
 * CPU) does not hold that task up. At 0 it ran between the 300-page PDF's two groups; at 50 ms the
 * CLI's main process sometimes reached its peak first (peak 308–337 against 312–315 MiB at 15 ms).
 */
export const RELEASE_IDLE_MS = 15;

/**
 * Memory given back by a worker left idle after a turn that grew its heap by `RELEASE_GROWTH_BYTES`
 * since the last release: a large document's text, lines and chunks are garbage once its answers
 * are sent, but V8 keeps their pages committed, and the caller (the CLI's main process writing that
 * document's rows) reaches its own peak meanwhile. A last-resort collection (V8's low-memory
 * collection, which also shrinks the young generation and frees empty pages) returns them: on the
 * 300-page PDF the worker went ≈150 → 105 MiB for ≈0.09 s of CPU while the main process wrote
 * (docs/performance.md, "Large files and memory"). Small turns never reach the threshold (above the
 * language table a worker keeps), so a pass of small files pays for no collection; the 61 mixed
 * documents for one.
 */
function idleRelease(): { schedule(): void; cancel(): void } {
  let kept = process.memoryUsage().heapUsed;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let gc: ((o: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void) | undefined;
  const release = () => {
    timer = undefined;
    if (!gc) {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as typeof gc;
    }
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    kept = process.memoryUsage().heapUsed;
  };
  return {
    schedule() {
      if (timer || process.memoryUsage().heapUsed - kept < RELEASE_GROWTH_BYTES) return;
      timer = setTimeout(release, RELEASE_IDLE_MS);
      timer.unref();
    },
    cancel() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
