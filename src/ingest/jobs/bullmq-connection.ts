import { Queue, QueueEvents } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import { KildeError } from '../../errors.js';

/*
 * What the two BullMQ queues (jobs, job batches) share: their Redis connections, the queue and its
 * events from every process, a Redis call bounded in time.
 */

/** A Redis call the API waits for at most this long before answering JOBS_UNAVAILABLE. */
const CALL_TIMEOUT_MS = 5000;

/** A Redis call the API waits for at most `CALL_TIMEOUT_MS`, then JOBS_UNAVAILABLE (also when it fails). */
export async function redisCall<T>(clock: Clock, what: string, fn: () => Promise<T>): Promise<T> {
  let timer: { cancel(): void } | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = clock.schedule(
      () => reject(new KildeError('JOBS_UNAVAILABLE', `Redis did not answer while ${what}`)),
      CALL_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([fn(), timeout]);
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw new KildeError('JOBS_UNAVAILABLE', `The job queue (Redis) is unavailable while ${what}`, {
      cause: err,
    });
  } finally {
    timer?.cancel();
  }
}

/** BullMQ queue `name` on the API's connection: retries with back-off, a bounded history. */
export function openQueue<D, R>(
  name: string,
  s: { maxAttempts: number; backoffMs: number; history: number; log: Logger },
  redis: Redis,
  prefix: string,
): Queue<D, R, string> {
  const queue = new Queue<D, R, string>(name, {
    connection: redis,
    prefix,
    defaultJobOptions: {
      attempts: s.maxAttempts,
      backoff: { type: 'exponential', delay: s.backoffMs },
      removeOnComplete: { count: s.history },
      removeOnFail: { count: s.history },
    },
  });
  queue.on('error', (err) => s.log.warn({ err: err.message, queue: name }, 'job queue: redis error'));
  return queue;
}

/** The API's connection to Redis; JOBS_UNAVAILABLE when it does not answer (start-up then fails). */
export async function connectRedis(url: string, log: Logger): Promise<Redis> {
  const redis = new Redis(url, { ...apiOptions(), lazyConnect: true });
  redis.on('error', (err: Error) => log.warn({ err: err.message }, 'job queue: redis connection error'));
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new KildeError('JOBS_UNAVAILABLE', 'Redis (REDIS_URL) is unreachable: the job queue cannot start', {
      cause: err,
    });
  }
  return redis;
}

/**
 * The events of BullMQ queue `name` from every process: `changed` with the id of each job whose
 * state or progress changed, `ended` once one has completed or failed.
 */
export function followQueue(
  name: string,
  s: { url: string; log: Logger },
  prefix: string,
  on: { changed(id: string): void; ended(id: string): void },
): QueueEvents {
  const events = new QueueEvents(name, { connection: blockingOptions(s.url), prefix });
  events.on('error', (err) => s.log.warn({ err: err.message, queue: name }, 'job events: redis error'));
  for (const kind of [
    'waiting',
    'active',
    'progress',
    'completed',
    'failed',
    'delayed',
    'stalled',
  ] as const) {
    events.on(kind, (args: { jobId: string }) => on.changed(args.jobId));
  }
  for (const kind of ['completed', 'failed'] as const) {
    events.on(kind, (args: { jobId: string }) => on.ended(args.jobId));
  }
  return events;
}

/** The API's connection: a command fails at once while Redis is down (no offline queue). */
export function apiOptions(): RedisOptions {
  return {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: 10_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  };
}

/**
 * Workers and event readers block on Redis; BullMQ requires them to retry for ever. Given as options
 * (not a client), so BullMQ opens and closes these connections itself.
 */
export function blockingOptions(url: string): RedisOptions {
  const u = new URL(url);
  const db = Number(u.pathname.replace(/^\//, '') || '0');
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isInteger(db) && db > 0 ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    maxRetriesPerRequest: null,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  };
}

/**
 * Closes a queue's worker, events, queue and connection: the worker takes nothing new and lets its
 * running work finish for `graceMs`; what still runs then is stopped (`stopping` aborts: the run
 * fails retryably and is queued again).
 */
export async function closeQueue(
  parts: {
    worker: { close(): Promise<void> } | undefined;
    events: { close(): Promise<void> } | undefined;
    queue: { close(): Promise<void> };
    redis: Redis;
    stopping: AbortController;
  },
  clock: Clock,
  graceMs: number,
): Promise<void> {
  const timer = clock.schedule(() => parts.stopping.abort(), graceMs);
  await parts.worker?.close().catch(() => undefined);
  timer.cancel();
  parts.stopping.abort();
  await parts.events?.close().catch(() => undefined);
  await parts.queue.close().catch(() => undefined);
  // QUIT waits for the replies of commands still in flight (a disconnect would reject them).
  await parts.redis.quit().catch(() => parts.redis.disconnect());
}
