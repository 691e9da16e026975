import { MessageChannel } from 'node:worker_threads';
import type { Logger } from 'pino';
import { Piscina } from 'piscina';
import { type Clock, systemClock, type Timer } from '../clock.js';
import { limitExceeded } from '../extract/limits.js';
import { KildeError } from '../http/errors.js';
import type { Task, TaskInput, TaskOutputs, TaskResult, WorkerSetup } from './tasks.js';

export interface PoolSettings {
  /** Worker threads (`EXTRACTION_WORKERS`). */
  size: number;
  /** V8 old-generation heap of one worker, MiB (`EXTRACTION_MAX_HEAP_MB`). */
  heapMb: number;
  /** Wall time of one task once it runs (`EXTRACTION_TIMEOUT`). */
  timeoutMs: number;
  setup: WorkerSetup;
}

export interface PoolDeps {
  log: Logger;
  /** Times a running task's limit; tests pass a manual clock and advance it themselves. */
  clock?: Clock;
}

/** Idle workers are stopped after this long; the next task starts a fresh one. */
const IDLE_MS = 60_000;

/*
 * From `src/` (tests, tsx) the worker entry is TypeScript and needs tsx's loader; from `dist/` it
 * is plain JavaScript.
 */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER = new URL(FROM_SOURCE ? './pool-worker.ts' : './pool-worker.js', import.meta.url).href;

/**
 * The worker pool of the in-process heavy work: extraction, chunking and BM25 encoding of whole
 * documents run here instead of on the event loop (piscina over worker_threads; see
 * docs/decisions.md for why threads rather than child processes). Every worker has a hard heap
 * limit and every task a wall-time limit; a worker that runs out of either is terminated and
 * replaced, and its caller gets `EXTRACTION_FAILED` naming the limit.
 */
export class WorkerPool {
  readonly #piscina: Piscina<Task, TaskResult<TaskInput['kind']>>;
  readonly #settings: PoolSettings;
  readonly #log: Logger;
  readonly #clock: Clock;

  constructor(settings: PoolSettings, deps: PoolDeps) {
    this.#settings = settings;
    this.#log = deps.log;
    this.#clock = deps.clock ?? systemClock;
    this.#piscina = new Piscina({
      filename: WORKER,
      name: 'default',
      minThreads: 0,
      maxThreads: settings.size,
      idleTimeout: IDLE_MS,
      // One document per worker at a time: the heap limit is then the document's.
      concurrentTasksPerWorker: 1,
      atomics: 'disabled',
      resourceLimits: { maxOldGenerationSizeMb: settings.heapMb, stackSizeMb: 4 },
      execArgv: FROM_SOURCE ? ['--import', 'tsx/esm'] : [],
      workerData: settings.setup,
    });
  }

  /** Runs one task in a worker; `signal` (the caller going away) stops it wherever it is. */
  async run<K extends TaskInput['kind']>(
    input: TaskInput & { kind: K },
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<TaskOutputs[K]> {
    const { signal } = options;
    signal?.throwIfAborted();
    const stop = new AbortController();
    let timedOut = false;
    let deadline: Timer | undefined;
    const { port1, port2 } = new MessageChannel();
    port1.once('message', () => {
      deadline = this.#clock.schedule(() => {
        timedOut = true;
        stop.abort();
      }, this.#settings.timeoutMs);
    });
    port1.unref();
    const onAbort = () => stop.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const result = (await this.#piscina.run(
        { input, started: port2 },
        { signal: stop.signal, transferList: [port2] },
      )) as TaskResult<K>;
      if (!result.ok) throw new KildeError(result.error.code, result.error.status, result.error.message);
      return result.value;
    } catch (err) {
      throw this.#failure(err, input.kind, timedOut, signal);
    } finally {
      deadline?.cancel();
      port1.close();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Threads now running and tasks waiting for one. */
  get load(): { threads: number; queued: number } {
    return { threads: this.#piscina.threads.length, queued: this.#piscina.queueSize };
  }

  /** Stops every worker at once (running tasks fail); call after requests have drained. */
  async close(): Promise<void> {
    await this.#piscina.destroy();
  }

  #failure(
    err: unknown,
    kind: TaskInput['kind'],
    timedOut: boolean,
    signal: AbortSignal | undefined,
  ): unknown {
    if (err instanceof KildeError) return err;
    if (timedOut) {
      const seconds = Math.round(this.#settings.timeoutMs / 1000);
      this.#log.warn(
        { task: kind, limitSeconds: seconds },
        'worker task over its time limit: worker replaced',
      );
      return limitExceeded(`processing took longer than ${seconds} s`, 'EXTRACTION_TIMEOUT');
    }
    if (signal?.aborted) return signal.reason ?? err;
    if ((err as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      this.#log.warn({ task: kind, heapMb: this.#settings.heapMb }, 'worker out of memory: worker replaced');
      return limitExceeded(
        `processing needed more than ${this.#settings.heapMb} MiB of memory`,
        'EXTRACTION_MAX_HEAP_MB',
      );
    }
    this.#log.error({ err, task: kind }, 'worker stopped unexpectedly: worker replaced');
    return new KildeError('EXTRACTION_FAILED', 500, 'The extraction worker stopped unexpectedly', {
      cause: err,
    });
  }
}
