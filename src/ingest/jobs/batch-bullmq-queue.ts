import { EventEmitter } from 'node:events';
import { type Job as BullJob, type Queue, type QueueEvents, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  type BatchFileRecord,
  type BatchHandler,
  type BatchPayload,
  type BatchQueue,
  type BatchRecord,
  type BatchState,
  batchToWire,
  initialFiles,
  type JobBatch,
} from './batch.js';
import {
  blockingOptions,
  closeQueue,
  connectRedis,
  followQueue,
  openQueue,
  redisCall,
} from './bullmq-connection.js';
import type { BullQueueSettings } from './bullmq-queue.js';
import { describeJobFailure, type JobError, jobErrorOf, retryableJobFailure } from './job.js';

const QUEUE = 'ingest-batch';

/** What a batch keeps in BullMQ's `progress` field: every file's record, and the failure that ended it. */
interface StoredBatch {
  files: BatchFileRecord[];
  error?: JobError;
}
type Bull = BullJob<BatchPayload, void, string>;

export type BullBatchSettings = Omit<BullQueueSettings, 'cleanup' | 'concurrency'> & {
  concurrency: number;
  cleanup(p: BatchPayload): Promise<void>;
};

/**
 * Job batches on BullMQ (queue `ingest-batch` beside `ingest`): durable and shared by every process
 * on the same Redis. Each file's record is written to the batch's `progress` as it settles, so a
 * batch whose worker died (kill -9: its lock lapses, another worker's stalled check queues it again)
 * is run again from the files it had not finished; a retry after a retryable failure likewise.
 */
export class BullBatchQueue implements BatchQueue {
  readonly kind = 'redis';
  readonly #queue: Queue<BatchPayload, void, string>;
  readonly #redis: Redis;
  readonly #events = new EventEmitter();
  readonly #prefix: string;
  readonly #stopping = new AbortController();
  #queueEvents: QueueEvents | undefined;
  #worker: Worker<BatchPayload, void, string> | undefined;

  private constructor(
    private readonly s: BullBatchSettings,
    redis: Redis,
  ) {
    this.#prefix = s.prefix ?? 'kilde';
    this.#redis = redis;
    this.#queue = openQueue<BatchPayload, void>(QUEUE, s, redis, this.#prefix);
    this.#events.setMaxListeners(0);
  }

  static async open(s: BullBatchSettings): Promise<BullBatchQueue> {
    const q = new BullBatchQueue(s, await connectRedis(s.url, s.log));
    q.#queueEvents = followQueue(QUEUE, s, q.#prefix, {
      changed: (id) => q.#events.emit('change', id),
      ended: (id) => void q.#releaseEnded(id),
    });
    await Promise.all([q.#queue.waitUntilReady(), q.#queueEvents.waitUntilReady()]);
    return q;
  }

  async submit(payload: BatchPayload, id: string): Promise<JobBatch> {
    const files = initialFiles(payload);
    const job = (await this.#call('queueing the batch', () =>
      this.#queue.add('batch', payload, { jobId: id }),
    )) as Bull;
    return batchToWire(this.#recordOf(job, 'queued', { files }));
  }

  async get(id: string): Promise<JobBatch | undefined> {
    return this.#call('reading the batch', async () => {
      // The state before the job: a batch read as ended then carries its end (finishedOn, the last
      // records), which the reverse order could miss.
      const state = await this.#queue.getJobState(id);
      if (state === 'unknown') return undefined;
      const job = (await this.#queue.getJob(id)) as Bull | undefined;
      if (!job) return undefined;
      const mapped: BatchState =
        state === 'active'
          ? 'running'
          : state === 'completed'
            ? 'done'
            : state === 'failed'
              ? 'failed'
              : 'queued';
      return batchToWire(this.#recordOf(job, mapped, stored(job)));
    });
  }

  subscribe(fn: (batchId: string) => void): () => void {
    this.#events.on('change', fn);
    return () => this.#events.off('change', fn);
  }

  async startWorker(handler: BatchHandler): Promise<void> {
    const s = this.s;
    this.#worker = new Worker<BatchPayload, void, string>(QUEUE, (job) => this.#process(job, handler), {
      connection: blockingOptions(s.url),
      prefix: this.#prefix,
      concurrency: s.concurrency,
      lockDuration: s.stalledMs,
      stalledInterval: s.stalledMs,
      maxStalledCount: s.maxAttempts,
    });
    this.#worker.on('error', (err) => s.log.warn({ err: err.message }, 'batch worker: redis error'));
    this.#worker.on('stalled', (jobId) =>
      s.log.warn({ batchId: jobId }, 'job batch stalled (its worker died?): queued again'),
    );
    this.#worker.on('completed', (job) => void this.#release(job));
    // A failure with a retry to come leaves the batch delayed: only a final one releases the uploads.
    this.#worker.on('failed', (job) => {
      if (job?.id !== undefined) void this.#releaseEnded(job.id);
    });
    await this.#worker.waitUntilReady();
  }

  async #process(job: Bull, handler: BatchHandler): Promise<void> {
    const id = job.id as string;
    const files = stored(job).files.map((f) => ({ ...f }));
    this.s.log.info({ batchId: id, files: files.length, attempt: job.attemptsStarted }, 'job batch started');
    // Every change is written, coalesced: one write in flight, the newest records after it.
    let writing: Promise<void> | undefined;
    let dirty = false;
    let ending: JobError | undefined;
    const write = (): Promise<void> => {
      dirty = true;
      writing ??= (async () => {
        while (dirty) {
          dirty = false;
          const p: StoredBatch = { files, ...(ending ? { error: ending } : {}) };
          await job.updateProgress(p as unknown as object).catch(() => undefined);
        }
      })().finally(() => {
        writing = undefined;
      });
      return writing;
    };
    try {
      await handler(job.data, {
        batchId: id,
        attempt: job.attemptsStarted,
        signal: this.#stopping.signal,
        files: files.map((f) => ({ ...f })),
        report: (index, file) => {
          if (files[index] === undefined) return;
          files[index] = file;
          void write();
        },
      });
      await write();
      await writing;
    } catch (err) {
      const error = jobErrorOf(err);
      const retry =
        (retryableJobFailure(err) || this.#stopping.signal.aborted) &&
        job.attemptsMade + 1 < this.s.maxAttempts;
      this.s.log.warn(
        { batchId: id, attempt: job.attemptsMade + 1, code: error.code, retry, err: describeJobFailure(err) },
        retry ? 'job batch: files failed retryably; retrying them' : 'job batch failed',
      );
      for (let i = 0; i < files.length; i++) {
        const f = files[i]!;
        if (f.state === 'queued' || f.state === 'running') {
          files[i] = retry ? { ...f, state: 'queued' } : { state: 'failed', result: null, error };
        }
      }
      if (!retry) ending = error;
      await write();
      await writing;
      if (this.#stopping.signal.aborted) throw new Error('the worker shut down during the batch');
      if (!retry) throw new UnrecoverableError(error.message);
      throw new Error(error.message);
    }
  }

  #recordOf(job: Bull, state: BatchState, p: StoredBatch): BatchRecord {
    const ended = state === 'done' || state === 'failed';
    const error =
      state === 'failed'
        ? (p.error ?? { code: 'PIPELINE_FAILED', message: job.failedReason || 'The batch failed' })
        : null;
    return {
      id: job.id as string,
      payload: job.data,
      state,
      createdAt: job.timestamp,
      startedAt: job.processedOn ?? null,
      finishedAt: ended ? (job.finishedOn ?? null) : null,
      attempts: job.attemptsStarted ?? job.attemptsMade,
      // A batch that failed for good leaves no file unsettled.
      files:
        state === 'failed' && error
          ? p.files.map((f) =>
              f.state === 'queued' || f.state === 'running' ? { state: 'failed', result: null, error } : f,
            )
          : p.files,
      error,
      lastError: null,
    };
  }

  async #releaseEnded(id: string): Promise<void> {
    try {
      const job = (await this.#queue.getJob(id)) as Bull | undefined;
      if (!job) return;
      const state = await job.getState();
      if (state === 'completed' || state === 'failed') await this.#release(job);
    } catch {
      // Redis gone again: the next start-up's spool sweep removes what is left.
    }
  }

  async #release(job: Bull): Promise<void> {
    await this.s
      .cleanup(job.data)
      .catch((err: unknown) =>
        this.s.log.warn({ batchId: job.id, err }, 'could not remove the spooled uploads of a job batch'),
      );
  }

  async probe(signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw signal.reason;
    await this.#call('ping', () => this.#redis.ping());
  }

  close(): Promise<void> {
    const parts = { worker: this.#worker, events: this.#queueEvents, queue: this.#queue, redis: this.#redis };
    return closeQueue({ ...parts, stopping: this.#stopping }, this.s.clock, this.s.shutdownGraceMs);
  }

  #call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return redisCall(this.s.clock, what, fn);
  }
}

/** The files' records a batch's `progress` holds, or those it was submitted with. */
function stored(job: Bull): StoredBatch {
  const p = job.progress as unknown as Partial<StoredBatch> | number | undefined;
  if (
    typeof p === 'object' &&
    p !== null &&
    Array.isArray(p.files) &&
    p.files.length === job.data.files.length
  ) {
    return { files: p.files, ...(p.error ? { error: p.error } : {}) };
  }
  return { files: initialFiles(job.data) };
}
