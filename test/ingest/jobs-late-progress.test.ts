import { setImmediate as turn } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { KildeError } from '../../src/errors.js';
import { BullJobQueue } from '../../src/ingest/jobs/bullmq-queue.js';
import type { JobContext, JobPayload, JobQueue } from '../../src/ingest/jobs/job.js';
import { MemoryJobQueue } from '../../src/ingest/jobs/memory-queue.js';
import { ManualClock } from '../helpers/clock.js';
import { REDIS_SERVER_MISSING, redisSuite } from '../helpers/redis.js';
import { redisForSuite } from '../helpers/redis-suite.js';

/*
 * A branch of the pipeline can still report its stage after another branch has failed the run
 * (the embedding fails while the sparse stage finishes). That late report must not overwrite the
 * stored failure: the job's record keeps the failure's code (it had become PIPELINE_FAILED under
 * BullMQ, a flaky `jobs.test.ts`). Real queues: the in-process one, and BullMQ on redis-server.
 */
const settings = {
  concurrency: 1,
  maxAttempts: 1,
  backoffMs: 10,
  history: 10,
  clock: new ManualClock({ start: Date.UTC(2026, 10, 23) }),
  log: pino({ level: 'silent' }),
  cleanup: async () => undefined,
};
const payload: JobPayload = {
  target: {
    fileId: 'late',
    filename: 'late.txt',
    collectionName: 'c',
    collectionType: 'file',
    userId: 'u',
    overwrite: true,
    source: 'late.txt',
  },
  source: { kind: 'spool', path: '/nonexistent/late.txt', bytes: 1 },
};

/** The job's record once it has failed: the handler's own failure. */
const FAILED = {
  state: 'failed',
  error: { code: 'EXTRACTION_FAILED', message: 'The file could not be read' },
};

async function scenario(queue: JobQueue) {
  let context: JobContext | undefined;
  await queue.startWorker(async (_payload, ctx) => {
    context = ctx;
    ctx.progress({ stage: 'embed' });
    throw new KildeError('EXTRACTION_FAILED', 'The file could not be read');
  });
  const submitted = await queue.submit(payload);
  const failed = new Promise<void>((resolve) => {
    const check = async () => {
      if ((await queue.get(submitted.job_id))?.state === 'failed') resolve();
    };
    queue.subscribe(() => void check());
    void check();
  });
  await failed;
  // The late report, after the run has failed, then a few turns of the event loop for any write.
  context?.progress({ stage: 'sparse' });
  for (let i = 0; i < 20; i++) await turn();
  return queue.get(submitted.job_id);
}

describe('a stage reported after the job failed', () => {
  it('in process: the failure keeps its code', async () => {
    const queue = new MemoryJobQueue(settings);
    try {
      expect(await scenario(queue)).toMatchObject(FAILED);
    } finally {
      await queue.close();
    }
  });

  describe.skipIf(REDIS_SERVER_MISSING !== undefined)(redisSuite('BullMQ on redis-server'), () => {
    const redis = redisForSuite();

    it('the failure keeps its code', async () => {
      const queue = await BullJobQueue.open({
        ...settings,
        url: redis.url,
        stalledMs: 30_000,
        shutdownGraceMs: 0,
        prefix: 'late',
      });
      try {
        expect(await scenario(queue)).toMatchObject(FAILED);
      } finally {
        await queue.close();
      }
    });
  });
});
