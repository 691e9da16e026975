import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullJobQueue } from '../../src/ingest/jobs/bullmq-queue.js';
import type { JobPayload, JobQueue } from '../../src/ingest/jobs/job.js';
import { MemoryJobQueue } from '../../src/ingest/jobs/memory-queue.js';
import { spoolDir, sweepSpool } from '../../src/ingest/jobs/runner.js';
import { ManualClock } from '../helpers/clock.js';
import { REDIS_SERVER_MISSING, redisSuite } from '../helpers/redis.js';
import { redisForSuite } from '../helpers/redis-suite.js';

/*
 * Spooled uploads (multipart job submissions) that nothing will read are removed at start-up:
 * the in-process queue forgets its jobs with its process, and a crash can skip the removal at the
 * end of a job. Folders of queued jobs, of uploads still arriving, and (on a shared volume) recent
 * ones stay. Real queues: the in-process one, and BullMQ on a real redis-server.
 */
const log = pino({ level: 'silent' });
const HOUR = 3_600_000;
const DEAD_PID = 999_999_999;
let root: string;
const clock = new ManualClock({ start: Date.UTC(2026, 10, 22) });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'kilde-spool-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const settings = {
  concurrency: 1,
  maxAttempts: 1,
  backoffMs: 10,
  history: 10,
  clock,
  log,
  cleanup: async () => undefined,
};

/** A spool folder `<pid>-<id>` with an upload in it, last written `ageMs` before the clock's now. */
async function folder(dir: string, pid: number, id: string, ageMs: number): Promise<string> {
  const name = `${pid}-${id}`;
  await mkdir(join(dir, name), { recursive: true });
  await writeFile(join(dir, name, 'source.txt'), 'an upload');
  const at = (clock.now() - ageMs) / 1000;
  await utimes(join(dir, name, 'source.txt'), at, at);
  await utimes(join(dir, name), at, at);
  return name;
}

const payload = (path: string): JobPayload => ({
  target: {
    fileId: 'f',
    filename: 'f.txt',
    collectionName: 'c',
    collectionType: 'file',
    userId: 'u',
    overwrite: true,
    source: 'f.txt',
  },
  source: { kind: 'spool', path, bytes: 9 },
});

async function scenario(queue: JobQueue, dir: string) {
  const queuedId = randomUUID();
  const queuedDir = await spoolDir(dir, queuedId);
  await queue.submit(payload(join(queuedDir, 'source.txt')), queuedId);
  const names = {
    queued: queuedDir.slice(dir.length + 1),
    deadOld: await folder(dir, DEAD_PID, randomUUID(), 2 * HOUR),
    deadRecent: await folder(dir, DEAD_PID, randomUUID(), 60_000),
    ownUnknown: await folder(dir, process.pid, randomUUID(), 2 * HOUR),
    arriving: await folder(dir, process.ppid, randomUUID(), 60_000),
    notSpool: 'readme',
  };
  await mkdir(join(dir, names.notSpool));
  const removed = await sweepSpool(dir, queue, { now: clock.now(), graceMs: HOUR });
  return { names, removed, left: (await readdir(dir)).sort() };
}

describe('the job spool sweep', () => {
  it('in-process queue: removes every upload no job of this process needs', async () => {
    const dir = join(root, 'memory');
    const queue = new MemoryJobQueue(settings);
    try {
      const { names, removed, left } = await scenario(queue, dir);
      expect(removed.sort()).toEqual([names.deadOld, names.deadRecent, names.ownUnknown].sort());
      expect(left).toEqual([names.arriving, names.notSpool, names.queued].sort());
    } finally {
      await queue.close();
    }
  });

  describe.skipIf(REDIS_SERVER_MISSING !== undefined)(redisSuite('BullMQ on redis-server'), () => {
    const redis = redisForSuite();

    it('keeps queued jobs and recent uploads (a shared volume), removes old unknown ones', async () => {
      const dir = join(root, 'redis');
      const queue = await BullJobQueue.open({
        ...settings,
        url: redis.url,
        stalledMs: 30_000,
        shutdownGraceMs: 0,
        prefix: 'spool',
      });
      try {
        const { names, removed, left } = await scenario(queue, dir);
        expect(removed.sort()).toEqual([names.deadOld, names.ownUnknown].sort());
        expect(left).toEqual([names.arriving, names.deadRecent, names.notSpool, names.queued].sort());
      } finally {
        await queue.close();
      }
    });
  });
});
