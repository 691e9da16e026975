import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { IngestConfig } from '../../config/ingest.js';
import type { BatchQueue } from './batch.js';
import { MemoryBatchQueue } from './batch-memory-queue.js';
import type { JobQueue } from './job.js';
import { MemoryJobQueue } from './memory-queue.js';
import { releaseBatchSpool, releaseSpool } from './runner.js';

/** BullMQ when `REDIS_URL` is set (durable, every process shares it); the in-process queue otherwise. */
export async function createJobQueue(
  config: IngestConfig,
  deps: { log: Logger; clock: Clock; prefix?: string },
): Promise<JobQueue> {
  const common = {
    concurrency: config.JOBS_CONCURRENCY,
    maxAttempts: config.JOBS_MAX_ATTEMPTS,
    backoffMs: config.JOBS_BACKOFF_MS,
    history: config.JOBS_HISTORY,
    clock: deps.clock,
    log: deps.log,
    cleanup: releaseSpool,
  };
  if (config.REDIS_URL === undefined) return new MemoryJobQueue(common);
  const { BullJobQueue } = await import('./bullmq-queue.js');
  return BullJobQueue.open({
    ...common,
    url: config.REDIS_URL,
    stalledMs: config.JOBS_STALLED_MS,
    shutdownGraceMs: config.SHUTDOWN_GRACE * 1000,
    ...(deps.prefix ? { prefix: deps.prefix } : {}),
  });
}

/** The queue of job batches beside it: BullMQ (queue `ingest-batch`) when `REDIS_URL` is set. */
export async function createBatchQueue(
  config: IngestConfig,
  deps: { log: Logger; clock: Clock; prefix?: string },
): Promise<BatchQueue> {
  const common = {
    concurrency: 1,
    maxAttempts: config.JOBS_MAX_ATTEMPTS,
    backoffMs: config.JOBS_BACKOFF_MS,
    history: config.JOBS_HISTORY,
    clock: deps.clock,
    log: deps.log,
    cleanup: releaseBatchSpool,
  };
  if (config.REDIS_URL === undefined) return new MemoryBatchQueue(common);
  const { BullBatchQueue } = await import('./batch-bullmq-queue.js');
  return BullBatchQueue.open({
    ...common,
    url: config.REDIS_URL,
    stalledMs: config.JOBS_STALLED_MS,
    shutdownGraceMs: config.SHUTDOWN_GRACE * 1000,
    ...(deps.prefix ? { prefix: deps.prefix } : {}),
  });
}
