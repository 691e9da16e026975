import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { IngestConfig } from '../../config/ingest.js';
import type { JobQueue } from './job.js';
import { MemoryJobQueue } from './memory-queue.js';
import { releaseSpool } from './runner.js';

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
