import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock, Timer } from '../../clock.js';
import {
  backoffMs,
  describeJobFailure,
  isTerminal,
  type Job,
  type JobCleanup,
  type JobHandler,
  type JobPayload,
  type JobQueue,
  type JobRecord,
  type JobState,
  jobErrorOf,
  jobNotFound,
  notCancellable,
  retryableJobFailure,
  toWire,
} from './job.js';

export interface QueueSettings {
  concurrency: number;
  maxAttempts: number;
  backoffMs: number;
  /** Finished jobs kept (done and failed, each). */
  history: number;
  clock: Clock;
  log: Logger;
  cleanup: JobCleanup;
}

/**
 * The queue without Redis (embedded mode, one process): the same states, retries, history and
 * events as the BullMQ queue, kept in memory. What it does not give: durability (queued and running
 * jobs are gone when the process stops) and workers in other processes.
 */
export class MemoryJobQueue implements JobQueue {
  readonly kind = 'memory';
  readonly #jobs = new Map<string, JobRecord>();
  readonly #pending: string[] = [];
  readonly #retries = new Map<string, Timer>();
  readonly #events = new EventEmitter();
  readonly #stopping = new AbortController();
  readonly #running = new Set<Promise<void>>();
  #handler: JobHandler | undefined;
  #active = 0;

  constructor(private readonly s: QueueSettings) {
    this.#events.setMaxListeners(0);
  }

  async submit(payload: JobPayload, id: string = randomUUID()): Promise<Job> {
    const record: JobRecord = {
      id,
      payload,
      state: 'queued',
      stage: null,
      createdAt: this.s.clock.now(),
      startedAt: null,
      finishedAt: null,
      chunksTotal: null,
      chunksDone: 0,
      attempts: 0,
      result: null,
      error: null,
      lastError: null,
    };
    this.#jobs.set(record.id, record);
    this.#pending.push(record.id);
    const queued = toWire(record);
    this.#changed(record);
    this.#pump();
    return queued;
  }

  async get(id: string): Promise<Job | undefined> {
    const r = this.#jobs.get(id);
    return r ? toWire(r) : undefined;
  }

  async list(limit: number, state?: JobState): Promise<Job[]> {
    // A Map iterates in insertion order: newest last.
    const out: Job[] = [];
    for (const r of [...this.#jobs.values()].reverse()) {
      if (state !== undefined && r.state !== state) continue;
      out.push(toWire(r));
      if (out.length >= limit) break;
    }
    return out;
  }

  async cancel(id: string): Promise<Job> {
    const r = this.#jobs.get(id);
    if (!r) throw jobNotFound(id);
    if (r.state !== 'queued') throw notCancellable(toWire(r));
    const at = this.#pending.indexOf(id);
    if (at >= 0) this.#pending.splice(at, 1);
    this.#retries.get(id)?.cancel();
    this.#retries.delete(id);
    r.state = 'cancelled';
    r.finishedAt = this.s.clock.now();
    const cancelled = toWire(r);
    await this.#finished(r);
    return cancelled;
  }

  subscribe(fn: (jobId: string) => void): () => void {
    this.#events.on('change', fn);
    return () => this.#events.off('change', fn);
  }

  async startWorker(handler: JobHandler): Promise<void> {
    this.#handler = handler;
    this.#pump();
  }

  async probe(): Promise<void> {}

  async close(): Promise<void> {
    this.#stopping.abort();
    for (const t of this.#retries.values()) t.cancel();
    this.#retries.clear();
    await Promise.all(this.#running);
  }

  #changed(r: JobRecord): void {
    this.#events.emit('change', r.id);
  }

  #pump(): void {
    const handler = this.#handler;
    if (!handler) return;
    while (this.#active < this.s.concurrency && this.#pending.length > 0 && !this.#stopping.signal.aborted) {
      const id = this.#pending.shift();
      const r = id === undefined ? undefined : this.#jobs.get(id);
      if (r?.state !== 'queued') continue;
      this.#active += 1;
      const run = this.#run(r, handler).finally(() => {
        this.#active -= 1;
        this.#running.delete(run);
        this.#pump();
      });
      this.#running.add(run);
    }
  }

  async #run(r: JobRecord, handler: JobHandler): Promise<void> {
    r.state = 'running';
    r.stage = null;
    r.attempts += 1;
    r.startedAt ??= this.s.clock.now();
    this.s.log.info({ jobId: r.id, fileId: r.payload.target.fileId, attempt: r.attempts }, 'job started');
    this.#changed(r);
    try {
      const result = await handler(r.payload, {
        jobId: r.id,
        attempt: r.attempts,
        signal: this.#stopping.signal,
        progress: (p) => {
          if (r.state !== 'running') return;
          r.stage = p.stage;
          if (p.chunksTotal !== undefined) r.chunksTotal = p.chunksTotal;
          if (p.chunksDone !== undefined) r.chunksDone = p.chunksDone;
          this.#changed(r);
        },
      });
      r.state = 'done';
      r.result = result;
      r.chunksTotal = result.chunks_count;
      r.chunksDone = result.chunks_count;
      r.finishedAt = this.s.clock.now();
      r.lastError = null;
      await this.#finished(r);
    } catch (err) {
      const error = jobErrorOf(err);
      const retry =
        retryableJobFailure(err) && r.attempts < this.s.maxAttempts && !this.#stopping.signal.aborted;
      this.s.log.warn(
        {
          jobId: r.id,
          fileId: r.payload.target.fileId,
          attempt: r.attempts,
          code: error.code,
          retry,
          err: describeJobFailure(err),
        },
        retry ? 'ingestion job failed; retrying' : 'ingestion job failed',
      );
      if (retry) {
        r.state = 'queued';
        r.stage = null;
        r.lastError = error;
        this.#changed(r);
        const timer = this.s.clock.schedule(
          () => {
            this.#retries.delete(r.id);
            if (r.state !== 'queued') return;
            this.#pending.push(r.id);
            this.#pump();
          },
          backoffMs(this.s.backoffMs, r.attempts),
        );
        this.#retries.set(r.id, timer);
        return;
      }
      r.state = 'failed';
      r.error = { ...error, stage: r.stage };
      r.lastError = null;
      r.finishedAt = this.s.clock.now();
      await this.#finished(r);
    }
  }

  /** A job ended: release its upload, announce it, and keep the history bounded. */
  async #finished(r: JobRecord): Promise<void> {
    // The upload goes before the end is announced: a client that saw the end sees no upload left.
    await this.s
      .cleanup(r.payload)
      .catch((err: unknown) =>
        this.s.log.warn({ jobId: r.id, err }, 'could not remove the spooled upload of a job'),
      );
    this.#changed(r);
    // Oldest first: drop finished jobs of this kind beyond the bound.
    const kind = (x: JobRecord) => (x.state === 'done' ? 'done' : 'other');
    let kept = 0;
    for (const x of [...this.#jobs.values()].reverse()) {
      if (!isTerminal(x.state) || kind(x) !== kind(r)) continue;
      kept += 1;
      if (kept > this.s.history) this.#jobs.delete(x.id);
    }
  }
}
