import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { IngestConfig } from '../../config/ingest.js';
import type { BatchQueue } from './batch.js';
import { BATCH_CONCURRENCY, MemoryBatchQueue } from './batch-memory-queue.js';
import type { JobQueue } from './job.js';
import { MemoryJobQueue } from './memory-queue.js';
import { releaseBatchSpool, releaseSpool } from './runner.js';

type QueueDeps = { log: Logger; clock: Clock; prefix?: string };

/** The settings both queues take from the configuration; `redis` those BullMQ adds. */
function settings(config: IngestConfig, deps: QueueDeps) {
  const common = {
    maxAttempts: config.JOBS_MAX_ATTEMPTS,
    backoffMs: config.JOBS_BACKOFF_MS,
    history: config.JOBS_HISTORY,
    clock: deps.clock,
    log: deps.log,
  };
  const redis = (url: string) => ({
    url,
    stalledMs: config.JOBS_STALLED_MS,
    shutdownGraceMs: config.SHUTDOWN_GRACE * 1000,
    ...(deps.prefix ? { prefix: deps.prefix } : {}),
  });
  return { common, redis };
}

/** BullMQ when `REDIS_URL` is set (durable, every process shares it); the in-process queue otherwise. */
export async function createJobQueue(config: IngestConfig, deps: QueueDeps): Promise<JobQueue> {
  const { common, redis } = settings(config, deps);
  const s = { ...common, concurrency: config.JOBS_CONCURRENCY, cleanup: releaseSpool };
  if (config.REDIS_URL === undefined) return new MemoryJobQueue(s);
  const { BullJobQueue } = await import('./bullmq-queue.js');
  return BullJobQueue.open({ ...s, ...redis(config.REDIS_URL) });
}

/** The queue of job batches beside it: BullMQ (queue `ingest-batch`) when `REDIS_URL` is set. */
export async function createBatchQueue(config: IngestConfig, deps: QueueDeps): Promise<BatchQueue> {
  const { common, redis } = settings(config, deps);
  const s = { ...common, concurrency: BATCH_CONCURRENCY, cleanup: releaseBatchSpool };
  if (config.REDIS_URL === undefined) return new MemoryBatchQueue(s);
  const { BullBatchQueue } = await import('./batch-bullmq-queue.js');
  return BullBatchQueue.open({ ...s, ...redis(config.REDIS_URL) });
}
