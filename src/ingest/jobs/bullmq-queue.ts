import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type JobType, type Queue, type QueueEvents, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import { CLAIM_CANCEL, CLAIM_RUN, CLAIM_TTL_S } from './bullmq-claims.js';
import {
  blockingOptions,
  closeQueue,
  connectRedis,
  followQueue,
  openQueue,
  redisCall,
} from './bullmq-connection.js';
import { type Bull, type Data, progressWriter, recordOf, STATE_TYPES, stateOf } from './bullmq-records.js';
import {
  describeJobFailure,
  type IngestSuccessBody,
  type Job,
  type JobCleanup,
  type JobHandler,
  type JobPayload,
  type JobQueue,
  type JobState,
  jobErrorOf,
  jobNotFound,
  notCancellable,
  retryableJobFailure,
  toWire,
} from './job.js';

export interface BullQueueSettings {
  url: string;
  concurrency: number;
  maxAttempts: number;
  backoffMs: number;
  history: number;
  /** A worker's lock on its running job (ms); a dead worker's job is re-queued after it lapses. */
  stalledMs: number;
  clock: Clock;
  log: Logger;
  cleanup: JobCleanup;
  /** How long a closing worker lets its running jobs finish before it stops them (ms). */
  shutdownGraceMs: number;
  /** Redis key prefix (tests isolate themselves with their own). */
  prefix?: string;
}

const QUEUE = 'ingest';
/**
 * Jobs on BullMQ (`REDIS_URL`): durable, shared by every process that points at the same Redis.
 *
 * - Retries: BullMQ's attempts with exponential back-off, but only for retryable failures; any other
 *   failure is an `UnrecoverableError`, so a corrupt file fails at once.
 * - A dead worker: its lock (`JOBS_STALLED_MS`) lapses and another worker's stalled check puts the job
 *   back in the wait list (BullMQ's watchdog); the file's Redis lease keeps the two runs apart.
 * - Cancel: one key per job (`<prefix>:job-claim:<id>`) taken with SET NX by the first of a worker
 *   starting it (`run`) and a cancel (`cancel`), so a job is never both cancelled and run.
 */
export class BullJobQueue implements JobQueue {
  readonly kind = 'redis';
  readonly #queue: Queue<Data, IngestSuccessBody, string>;
  readonly #redis: Redis;
  readonly #events = new EventEmitter();
  readonly #prefix: string;
  #queueEvents: QueueEvents | undefined;
  #worker: Worker<Data, IngestSuccessBody, string> | undefined;
  readonly #stopping = new AbortController();
  /** Jobs whose current run is their last (a failure not retried): their `failed` event releases the upload. */
  readonly #final = new Set<string>();

  private constructor(
    private readonly s: BullQueueSettings,
    redis: Redis,
  ) {
    this.#prefix = s.prefix ?? 'kilde';
    this.#redis = redis;
    redis.defineCommand('kildeJobRun', { numberOfKeys: 1, lua: CLAIM_RUN });
    redis.defineCommand('kildeJobCancel', { numberOfKeys: 1, lua: CLAIM_CANCEL });
    this.#queue = openQueue<Data, IngestSuccessBody>(QUEUE, s, redis, this.#prefix);
    this.#events.setMaxListeners(0);
  }

  /** Connects (start-up fails when Redis does not answer, like the per-file lease) and listens for job events. */
  static async open(s: BullQueueSettings): Promise<BullJobQueue> {
    const q = new BullJobQueue(s, await connectRedis(s.url, s.log));
    q.#queueEvents = followQueue(QUEUE, s, q.#prefix, {
      changed: (id) => q.#events.emit('change', id),
      // Every process also releases an upload when it learns from Redis that the job has ended: the
      // worker that ran it may have missed its own event (its reply lost while Redis restarted).
      ended: (id) => void q.#releaseEnded(id),
    });
    // Each connection finishes its set-up (BullMQ reads the server's version) before it can be
    // closed: closing one mid-way leaves a rejected promise inside BullMQ.
    await Promise.all([q.#queue.waitUntilReady(), q.#queueEvents.waitUntilReady()]);
    return q;
  }

  async submit(payload: JobPayload, id: string = randomUUID()): Promise<Job> {
    const job = (await this.#call('queueing the job', () =>
      this.#queue.add('ingest', payload, { jobId: id }),
    )) as Bull;
    return toWire(recordOf(job, 'queued', null));
  }

  async get(id: string): Promise<Job | undefined> {
    return this.#call('reading the job', async () => {
      const job = (await this.#queue.getJob(id)) as Bull | undefined;
      if (!job) return undefined;
      const [state, claim] = await Promise.all([job.getState(), this.#redis.get(this.#claimKey(id))]);
      if (state === 'unknown') return undefined;
      return toWire(recordOf(job, stateOf(state, claim), claim));
    });
  }

  async list(limit: number, state?: JobState): Promise<Job[]> {
    return this.#call('listing jobs', async () => {
      const types = state
        ? STATE_TYPES[state]
        : (['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'] as JobType[]);
      const found = await Promise.all(
        types.map(async (t) =>
          ((await this.#queue.getJobs([t], 0, limit - 1, false)) as Bull[]).map((j) => ({ t, j })),
        ),
      );
      const all = found.flat().filter(({ j }) => j?.id !== undefined);
      const claims =
        all.length === 0 ? [] : await this.#redis.mget(all.map(({ j }) => this.#claimKey(j.id as string)));
      const jobs = all
        .map(({ t, j }, i) => toWire(recordOf(j, stateOf(t, claims[i] ?? null), claims[i] ?? null)))
        .filter((j) => state === undefined || j.state === state);
      jobs.sort((a, b) => b.created_at.localeCompare(a.created_at));
      return jobs.slice(0, limit);
    });
  }

  async cancel(id: string): Promise<Job> {
    const job = await this.get(id);
    if (!job) throw jobNotFound(id);
    if (job.state === 'cancelled') return job;
    if (job.state !== 'queued') throw notCancellable(job);
    // The claim as this read left it: none before the first run, else the run now waiting for its retry.
    const expected = job.attempts === 0 ? '' : `run:${job.attempts}`;
    const won = await this.#call('cancelling the job', () =>
      this.#redis.kildeJobCancel(this.#claimKey(id), `cancel:${this.s.clock.now()}`, expected, CLAIM_TTL_S),
    );
    const after = await this.get(id);
    if (!after) throw jobNotFound(id);
    if (won !== 1 || after.state !== 'cancelled') throw notCancellable(after);
    // Its upload goes now; the job itself stays listed as cancelled, and the worker that picks it
    // up ends it at once.
    const raw = (await this.#queue.getJob(id).catch(() => undefined)) as Bull | undefined;
    if (raw) await this.s.cleanup(raw.data).catch(() => undefined);
    this.#events.emit('change', id);
    return after;
  }

  subscribe(fn: (jobId: string) => void): () => void {
    this.#events.on('change', fn);
    return () => this.#events.off('change', fn);
  }

  async startWorker(handler: JobHandler): Promise<void> {
    const s = this.s;
    this.#worker = new Worker<Data, IngestSuccessBody, string>(
      QUEUE,
      (job, token) => this.#process(job, handler, token),
      {
        connection: blockingOptions(s.url),
        prefix: this.#prefix,
        concurrency: s.concurrency,
        lockDuration: s.stalledMs,
        stalledInterval: s.stalledMs,
        // A job a dead worker left is re-run this many times before it fails.
        maxStalledCount: s.maxAttempts,
      },
    );
    this.#worker.on('error', (err) => s.log.warn({ err: err.message }, 'job worker: redis error'));
    this.#worker.on('stalled', (jobId) =>
      s.log.warn({ jobId }, 'job stalled (its worker died?): queued again'),
    );
    // The upload goes once BullMQ has recorded the end: a run that lost its lock (a long pause) and
    // finished late must not remove the file a second run of the job is reading.
    this.#worker.on('completed', (job) => void this.#release(job));
    this.#worker.on('failed', (job) => {
      if (job?.id !== undefined && this.#final.delete(job.id)) void this.#release(job);
    });
    await this.#worker.waitUntilReady();
    s.log.info({ concurrency: s.concurrency, stalledMs: s.stalledMs }, 'job worker started (BullMQ)');
  }

  async #process(job: Bull, handler: JobHandler, _token?: string): Promise<IngestSuccessBody> {
    const id = job.id as string;
    const claimed = await this.#redis.kildeJobRun(
      this.#claimKey(id),
      `run:${job.attemptsStarted}`,
      CLAIM_TTL_S,
    );
    if (claimed !== 1) {
      this.#final.add(id);
      throw new UnrecoverableError('cancelled before it started');
    }
    this.s.log.info(
      { jobId: id, fileId: job.data.target.fileId, attempt: job.attemptsStarted },
      'job started',
    );
    const progress = progressWriter(job);
    await progress.start();
    try {
      const result = await handler(job.data, {
        jobId: id,
        attempt: job.attemptsStarted,
        signal: this.#stopping.signal,
        progress: (p) => progress.report(p),
      });
      await progress.end();
      return result;
    } catch (err) {
      const error = jobErrorOf(err);
      const retry =
        (retryableJobFailure(err) || this.#stopping.signal.aborted) &&
        job.attemptsMade + 1 < this.s.maxAttempts;
      this.s.log.warn(
        {
          jobId: id,
          fileId: job.data.target.fileId,
          attempt: job.attemptsMade + 1,
          code: error.code,
          retry,
          err: describeJobFailure(err),
        },
        retry ? 'ingestion job failed; retrying' : 'ingestion job failed',
      );
      await progress.fail(error);
      if (!retry) this.#final.add(id);
      // Stopped by a shutdown that outlasted its grace: run it again (another worker, or this one restarted).
      if (this.#stopping.signal.aborted) throw new Error('the worker shut down during the job');
      if (!retryableJobFailure(err)) throw new UnrecoverableError(error.message);
      throw new Error(error.message);
    }
  }

  /** The upload of a job whose end Redis has recorded (a failure with a retry to come is not one). */
  async #releaseEnded(id: string): Promise<void> {
    try {
      const job = (await this.#queue.getJob(id)) as Bull | undefined;
      if (job?.data.source.kind !== 'spool') return;
      const state = await job.getState();
      if (state === 'completed' || state === 'failed') await this.#release(job);
    } catch {
      // Redis gone again: the next start-up's spool sweep removes what is left.
    }
  }

  /** These events fire once BullMQ has recorded the end, so no Redis read is needed (it may be down). */
  async #release(job: Bull): Promise<void> {
    try {
      await this.s.cleanup(job.data);
    } catch (err) {
      this.s.log.warn({ jobId: job.id, err }, 'could not remove the spooled upload of a job');
    }
  }

  async probe(signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw signal.reason;
    await this.#call('ping', () => this.#redis.ping());
  }

  /**
   * Takes no new jobs and lets running ones finish for `shutdownGraceMs`; those still running then
   * are stopped and queued again (the signal aborts, the run fails retryably).
   */
  close(): Promise<void> {
    const parts = { worker: this.#worker, events: this.#queueEvents, queue: this.#queue, redis: this.#redis };
    return closeQueue({ ...parts, stopping: this.#stopping }, this.s.clock, this.s.shutdownGraceMs);
  }

  #claimKey(id: string): string {
    return `${this.#prefix}:job-claim:${id}`;
  }

  /** Redis down: fail fast with a clear code rather than hang the request. */
  #call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return redisCall(this.s.clock, what, fn);
  }
}
