import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock.js';
import { revive } from '../errors.js';
import { Backlog } from './pool-backlog.js';
import { timedOutError, workerFailure } from './pool-errors.js';
import {
  estimateMs,
  grown,
  idleFor,
  mergeable,
  pickFor,
  RECYCLE_GROWTH_MB,
  takeMergeable,
} from './pool-policy.js';
import { forkWorker, hold } from './pool-process.js';
import { IDLE_MS, type PoolDeps, type PoolSettings, type RunOptions } from './pool-settings.js';
import type { Job, PoolStats, Worker } from './pool-state.js';
import type { FromWorker, TaskMap, ToWorker } from './protocol.js';

export { timedOutItem } from './pool-errors.js';
export { BACKLOG_MS, BACKLOG_WORK_MS, HEAVY_WEIGHT, MERGE, STALL_MS } from './pool-policy.js';
export { workerEntry } from './pool-process.js';
export {
  IDLE_MS,
  type PoolDeps,
  type PoolErrors,
  type PoolSettings,
  type RunOptions,
} from './pool-settings.js';
export type { TaskInput, TaskMap, TaskResult } from './protocol.js';

/** What is kept of a worker's stderr: enough for V8's out-of-memory report. */
const STDERR_TAIL = 4096;

/**
 * A pool of worker processes for the in-process heavy work (Kilde's: extraction, chunking and BM25
 * encoding of whole documents, src/ingest/pool-worker.ts) instead of the event loop (see
 * docs/decisions.md for why processes rather than threads: a V8 heap-limit failure in a worker
 * *thread* can abort the whole process). It knows the tasks `T` only by kind: the domain defines
 * them and the workers' handlers (`settings.worker`). Every worker has a hard heap limit
 * (`--max-old-space-size`) and every task a wall-time limit that starts when the task does; a worker
 * that runs out of either is killed and replaced, and its caller gets `settings.errors`' error
 * naming the limit. One task per worker at a time, so the heap limit is the task's.
 */
export class WorkerPool<T extends TaskMap = TaskMap> {
  readonly #settings: PoolSettings;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #idleClock: Clock;
  readonly #workers = new Set<Worker>();
  readonly #queue: Job[] = [];
  #nextId = 1;
  #turns = 0;
  #started = 0;
  readonly #backlog: Backlog;
  #closed = false;

  constructor(settings: PoolSettings, deps: PoolDeps) {
    this.#settings = settings;
    this.#log = deps.log;
    this.#clock = deps.clock ?? systemClock;
    this.#idleClock = deps.idleClock ?? systemClock;
    this.#backlog = new Backlog(this.#clock, () => this.#pump());
  }

  /** Runs one task in a worker; `signal` (the caller going away) stops it wherever it is. */
  run<K extends keyof T & string>(
    input: T[K]['input'] & { kind: K },
    options: RunOptions = {},
  ): Promise<T[K]['output']> {
    const { signal, affinity, weight } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed) return Promise.reject(new Error('the worker pool is closed'));
    return new Promise<T[K]['output']>((resolve, reject) => {
      const onAbort = () => this.#abort(job, signal?.reason);
      const job: Job = {
        id: this.#nextId++,
        input,
        signal,
        affinity,
        weight,
        queuedAt: this.#clock.now(),
        passed: 0,
        resolve: (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(value as T[K]['output']);
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(job);
      this.#pump();
    });
  }

  /** Most worker processes (`EXTRACTION_WORKERS`). */
  get size(): number {
    return this.#settings.size;
  }

  /**
   * Starts the kept workers (`warm`) now, while nothing waits on them, so that the first task after
   * start-up does not pay a worker's start (`kilde serve`, once it listens).
   */
  prewarm(): void {
    const warm = Math.min(this.#settings.warm ?? 0, this.#settings.size);
    while (!this.#closed && this.#workers.size < warm) this.#spawnKept();
  }

  /**
   * Starts one worker now when none runs, for tasks about to come (`kilde ingest`: its start overlaps
   * the pipeline's own, the index's settings and sweep); with `preload` it loads PDFium too, as a
   * kept worker does. It stops when idle as any worker does.
   */
  startOne(preload: boolean): void {
    if (this.#closed || this.#workers.size > 0) return;
    const worker = this.#spawn();
    if (preload) this.#preload(worker);
    this.#idleLater(worker);
  }

  /** Worker processes now running and tasks waiting for one. */
  get load(): { threads: number; queued: number } {
    return { threads: this.#workers.size, queued: this.#queue.length };
  }

  /**
   * How many more tasks would start at once, now: idle workers and workers not yet started, less
   * the tasks already waiting (a large PDF is read in parts only when two can run side by side).
   */
  get free(): number {
    let busy = 0;
    for (const w of this.#workers) if (w.turn.length > 0) busy++;
    return this.#closed ? 0 : Math.max(0, this.#settings.size - busy - this.#queue.length);
  }

  /** Turns handed to workers so far, each one task or several merged (diagnostics; the tests count them). */
  get turns(): number {
    return this.#turns;
  }

  /** Workers started so far; each running one's libraries and tasks run (diagnostics; the policy's tests). */
  get stats(): PoolStats {
    const workers = [...this.#workers].map((w) => ({
      pid: w.child.pid,
      libraries: [...w.warm].sort(),
      tasks: w.tasks,
    }));
    return { started: this.#started, workers };
  }

  /** Process ids of the workers now running (diagnostics; the crash tests kill one). */
  get pids(): number[] {
    return [...this.#workers].flatMap((w) => (w.child.pid === undefined ? [] : [w.child.pid]));
  }

  /** Stops every worker at once (running and queued tasks fail); call after requests have drained. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error('the worker pool is closed');
    for (const job of this.#queue.splice(0)) this.#settle(job, closed);
    this.#backlog.cancel();
    const exits = [...this.#workers].map((w) => {
      for (const job of w.turn) this.#settle(job, closed);
      return this.#kill(w, 'SIGTERM');
    });
    await Promise.all(exits);
  }

  #pump(): void {
    while (this.#queue.length > 0 && !this.#closed) {
      const idle = [...this.#workers].filter((w) => w.turn.length === 0);
      const worker = idleFor(this.#queue[0], idle, this.#workers) ?? this.#spawnFor();
      if (!worker) break;
      const first = pickFor(this.#queue, worker, this.#workers);
      // Queued light tasks join it in one turn (pool-policy.ts).
      const turn = [first, ...(mergeable(first) ? takeMergeable(this.#queue, first) : [])];
      for (const job of turn) for (const lib of job.affinity ?? []) worker.warm.add(lib);
      worker.tasks += turn.length;
      worker.turnMs = turn.reduce((ms, job) => ms + estimateMs(job), 0);
      worker.idle?.cancel();
      worker.idle = undefined;
      worker.turn = turn;
      worker.merged = turn.length > 1;
      this.#turns++;
      this.#backlog.started();
      hold(worker.child, true);
      worker.child.send({
        type: 'tasks',
        tasks: turn.map((job) => ({ id: job.id, input: job.input })),
      } satisfies ToWorker);
    }
    this.#backlog.watch(this.#queue, this.#workers, this.#workers.size < this.#settings.size);
  }

  /**
   * A worker for the queued work when none is idle: the first one, or another when the work
   * warrants it (pool-policy.ts, `warranted`: a backlog, not merely a DOCX or a PDF).
   */
  #spawnFor(): Worker | undefined {
    if (this.#workers.size === 0) return this.#spawn();
    if (this.#workers.size >= this.#settings.size) return undefined;
    const why = this.#backlog.why(this.#queue, this.#workers);
    if (why === undefined) return undefined;
    this.#log.debug({ why, queued: this.#queue.length }, 'another pool worker started');
    return this.#spawn();
  }

  #spawn(): Worker {
    const child = forkWorker(this.#settings.worker, this.#settings.heapMb);
    const worker: Worker = {
      child,
      turn: [],
      merged: false,
      stderr: '',
      warm: new Set(),
      tasks: 0,
      turnMs: 0,
    };
    this.#workers.add(worker);
    this.#started++;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      worker.stderr = (worker.stderr + text).slice(-STDERR_TAIL);
    });
    child.on('message', (msg: FromWorker) => this.#onMessage(worker, msg));
    child.on('error', (err) => this.#onExit(worker, null, null, err));
    // 'close' rather than 'exit': V8's out-of-memory report on stderr has been read by then.
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) =>
      this.#onExit(worker, code, signal),
    );
    child.send({ type: 'setup', setup: this.#settings.setup } satisfies ToWorker);
    hold(child, false);
    return worker;
  }

  #onMessage(worker: Worker, msg: FromWorker): void {
    // A worker stopped (at a time limit, for an abort) takes no more messages.
    if (!this.#workers.has(worker)) return;
    const job = worker.turn.find((j) => j.id === msg.id);
    if (!job) return;
    if (msg.type === 'started') {
      // Each task of a turn, and each item of a task over many, has its own time limit from when it
      // starts; an aborted caller's task is still timed (its result is discarded, its worker guarded).
      worker.deadline?.cancel();
      worker.current = job;
      job.item = msg.item ?? 0;
      worker.deadline = this.#clock.schedule(() => this.#timeOut(worker, job), this.#settings.timeoutMs);
      return;
    }
    worker.turn.splice(worker.turn.indexOf(job), 1);
    if (msg.memory) worker.memory = msg.memory;
    worker.deadline?.cancel();
    worker.deadline = undefined;
    worker.current = undefined;
    const result = msg.result;
    if (result.ok) this.#settle(job, undefined, result.value);
    else this.#settle(job, revive(result.error));
    if (worker.turn.length > 0) return;
    hold(worker.child, false);
    if (this.#queue.length > 0) this.#pump();
    else this.#idleLater(worker);
  }

  /**
   * A worker idle for `IDLE_MS` stops, unless it is one of the `warm` kept running: then it stays,
   * or, when it has grown by `recycleGrowthMb` since its start (a large document's heap that V8 keeps),
   * a fresh one takes its place now, while nothing waits on it.
   */
  #idleLater(worker: Worker): void {
    worker.idle = this.#idleClock.schedule(() => {
      worker.idle = undefined;
      if (worker.turn.length > 0 || !this.#workers.has(worker) || this.#closed) return;
      const warm = Math.min(this.#settings.warm ?? 0, this.#settings.size);
      if (this.#workers.size > warm) {
        void this.#kill(worker, 'SIGTERM');
        return;
      }
      const growthMb = this.#settings.recycleGrowthMb ?? RECYCLE_GROWTH_MB;
      if (!grown(worker.memory, growthMb)) return;
      this.#log.debug({ rss: worker.memory?.rss }, 'idle worker replaced by a fresh one (it had grown)');
      void this.#kill(worker, 'SIGTERM');
      this.#spawnKept();
    }, IDLE_MS);
  }

  /** A worker started while nothing waits (kept warm): it loads what every document needs now. */
  #spawnKept(): void {
    this.#preload(this.#spawn());
  }

  /** Has `worker` load now what most tasks need (`PoolSettings.preloads`: the libraries it counts as loaded). */
  #preload(worker: Worker): void {
    worker.child.send({ type: 'preload' } satisfies ToWorker);
    for (const lib of this.#settings.preloads ?? []) worker.warm.add(lib);
  }

  #timeOut(worker: Worker, job: Job): void {
    const seconds = Math.round(this.#settings.timeoutMs / 1000);
    this.#log.warn(
      { task: job.input.kind, limitSeconds: seconds },
      'worker task over its time limit: worker replaced',
    );
    const err = timedOutError(this.#settings.errors, seconds, job.item ?? 0);
    this.#settle(job, err);
    this.#stop(worker);
  }

  /**
   * Kills `worker` under its turn: the tasks of the turn not yet started (nor settled) go back to
   * the head of the queue, in order, for the next worker.
   */
  #stop(worker: Worker): void {
    this.#queue.unshift(...worker.turn.filter((j) => !j.settled && j !== worker.current));
    worker.turn = [];
    void this.#kill(worker, 'SIGKILL');
  }

  /**
   * A caller going away: its queued task is dropped; its running one is stopped with its worker
   * (the others of a merged turn not yet started go on in the next worker); one not yet started in
   * a merged turn runs, and its result is discarded.
   */
  #abort(job: Job, reason: unknown): void {
    const queued = this.#queue.indexOf(job);
    if (queued >= 0) this.#queue.splice(queued, 1);
    this.#settle(job, reason);
    for (const w of this.#workers) {
      if (w.turn.includes(job) && (w.current === job || w.turn.every((j) => j.settled))) this.#stop(w);
    }
  }

  #onExit(worker: Worker, code: number | null, signal: NodeJS.Signals | null, err?: Error): void {
    if (!this.#workers.delete(worker)) return;
    worker.idle?.cancel();
    worker.deadline?.cancel();
    const { turn, current, merged } = worker;
    worker.turn = [];
    const open = turn.filter((j) => !j.settled);
    if (merged) {
      // A merged turn died: the task running then (every open one, when none had started) runs
      // again alone, so a crash or the heap limit lands on the task that caused it; the others go on.
      for (const job of open) if (job === current || !current) job.alone = true;
      this.#queue.unshift(...open);
    } else {
      for (const job of open)
        this.#settle(
          job,
          workerFailure(
            { stderr: worker.stderr, heapMb: this.#settings.heapMb, task: job.input.kind, code, signal, err },
            this.#settings.errors,
            this.#log,
          ),
        );
    }
    this.#pump();
  }

  #settle(job: Job, err: unknown, value?: unknown): void {
    if (job.settled) return;
    job.settled = true;
    if (err === undefined) job.resolve(value);
    else job.reject(err);
  }

  /**
   * Ends a worker and resolves when its process has exited. It leaves the pool at once, so no
   * task is handed to it meanwhile; its job, if any, is already settled.
   */
  #kill(worker: Worker, how: NodeJS.Signals): Promise<void> {
    const { child } = worker;
    this.#workers.delete(worker);
    worker.idle?.cancel();
    worker.deadline?.cancel();
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // Held until it has exited: a caller awaiting `close()` must not see this process end first.
    child.ref();
    child.kill(how);
    // The next task may start a new worker now that this one has left the pool.
    queueMicrotask(() => this.#pump());
    return exited;
  }
}
