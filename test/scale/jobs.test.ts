import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_COLLECTION, type StoredPoint } from '../../src/index/contract.js';
import type { VectorIndex } from '../../src/index/store.js';
import type { Job } from '../../src/ingest/jobs/job.js';
import type { Server } from '../cli/helpers.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { AUTH } from '../helpers/app.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { openQdrant } from '../index/qdrant-target.js';
import { multipartBody, pointsOf, versionsOf } from '../ingest/helpers/harness.js';
import { processEnv, startProcess } from './processes.js';

/**
 * Issue 14's proof for ingestion jobs on one machine: one real `redis-server` (append-only file on),
 * one `kilde serve ingest` taking jobs (its own workers off), three `kilde serve worker` processes,
 * one index (the OpenAPI-checking Qdrant fake, over HTTP), one embedding server, one spool folder.
 * 500 small files spread over the three workers; a worker killed (SIGKILL) mid-job and its job
 * finished by another, one version; Redis killed and restarted mid-run: clear 503s while it is down,
 * and every acknowledged job finishes.
 */
const WORKERS = 3;
const FILES = 500;

let redis: RedisServer;
let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let index: VectorIndex;
let dataDir: string;
let redisDir: string;
let spool: string;
let api: { server: Server; url: string };
const workers: { server: Server; url: string }[] = [];

function env(name: string, extra: Record<string, string> = {}) {
  const shared = { dataDir, qdrantUrl: qdrant.url, embedBaseUrl: embed.baseUrl, redisUrl: redis.url };
  return processEnv(shared, name, {
    LOCK_LEASE_MS: '3000',
    JOBS_SPOOL_DIR: spool,
    JOBS_CONCURRENCY: '4',
    JOBS_MAX_ATTEMPTS: '5',
    JOBS_BACKOFF_MS: '200',
    // A dead worker's job is re-queued within about twice this.
    // Generous on a loaded 2-core machine: a lock renewed late counts as a dead worker.
    JOBS_STALLED_MS: '4000',
    ...extra,
  });
}

function submit(fileId: string, text: string, collection = 'jobs') {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: collection, user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );
  return fetch(`${api.url}/api/v1/jobs`, {
    method: 'POST',
    headers: { ...AUTH, ...headers },
    body: new Uint8Array(body),
  });
}

async function job(id: string): Promise<Job> {
  const res = await fetch(`${api.url}/api/v1/jobs/${id}`, { headers: AUTH });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Job;
}

/**
 * The spool folder empties once each job's end is recorded (BullMQ: after its completed or failed
 * event, so a moment after the stream ended). Bounded polling (attempts, not a clock).
 */
async function spoolEmptied() {
  let left: string[] = [];
  for (let i = 0; i < 1000; i++) {
    left = await readdir(spool);
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(left).toEqual([]);
}

/** Bounded polling (attempts, not a clock). */
async function until(check: () => boolean | Promise<boolean>, what: string, attempts = 1200) {
  for (let i = 0; i < attempts; i++) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const tails = [api, ...workers].map((p) => p?.server.output.split('\n').slice(-15).join('\n'));
  throw new Error(`never happened: ${what}\n${tails.join('\n----\n')}`);
}

/** Every chunk of a collection, grouped by file_id. */
async function filesOf(collection: string): Promise<Map<string, StoredPoint[]>> {
  const byFile = new Map<string, StoredPoint[]>();
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { collectionNames: [collection], chunksOnly: true },
      { limit: 1000, ...(cursor ? { cursor } : {}) },
    );
    for (const p of page.points) byFile.set(p.meta.file_id, [...(byFile.get(p.meta.file_id) ?? []), p]);
    cursor = page.next;
  } while (cursor);
  return byFile;
}

const startedJobs = (output: string, id?: string) =>
  output.split('\n').filter((l) => l.includes('"msg":"job started"') && (id === undefined || l.includes(id)));

async function allDone(ids: readonly string[]): Promise<Job[]> {
  const jobs = await Promise.all(ids.map(job));
  const failed = jobs.filter((j) => j.state === 'failed' || j.state === 'cancelled');
  expect(failed, JSON.stringify(failed.slice(0, 3))).toEqual([]);
  return jobs;
}

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('ingestion jobs: one API process and three workers on one Redis'),
  () => {
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'kilde-jobs-scale-'));
      redisDir = join(dataDir, 'redis');
      spool = join(dataDir, 'spool');
      await mkdir(redisDir, { recursive: true });
      [redis, qdrant, embed] = await Promise.all([
        startRedis(undefined, { dir: redisDir }),
        startQdrantFake(),
        startFakeOpenAIEmbeddings({ dim: 16 }),
      ]);
      // The API first (it creates the collection), then the workers.
      api = await startProcess(['serve', 'ingest'], env('api', { JOBS_WORKER_ENABLED: 'false' }));
      for (let i = 0; i < WORKERS; i++)
        workers.push(await startProcess(['serve', 'worker'], env(`worker-${i}`)));
      index = openQdrant(
        { url: qdrant.url, violations: () => qdrant.violations },
        { collection: DEFAULT_COLLECTION },
      );
    }, 180_000);

    afterAll(async () => {
      await Promise.all([api?.server.stop(), ...workers.map((w) => w.server.stop())]);
      await Promise.all([redis?.stop(), qdrant?.close(), embed?.close()]);
      await rm(dataDir, { recursive: true, force: true });
    });

    it(`${FILES} small files queued at once all finish, spread over the ${WORKERS} workers`, async () => {
      const before = workers.map((w) => startedJobs(w.server.output).length);
      const ids: string[] = [];
      for (let i = 0; i < FILES; i += 25) {
        const answers = await Promise.all(
          Array.from({ length: Math.min(25, FILES - i) }, (_, k) =>
            submit(`many-${i + k}`, `File ${i + k}. The wren sings in the hedge at dawn.`, 'many'),
          ),
        );
        for (const a of answers) {
          expect(a.status).toBe(202);
          ids.push(((await a.json()) as Job).job_id);
        }
      }
      await until(async () => {
        const res = await fetch(`${api.url}/api/v1/jobs?state=done&limit=500`, { headers: AUTH });
        const { jobs } = (await res.json()) as { jobs: Job[] };
        return jobs.filter((j) => j.collection_name === 'many').length >= FILES;
      }, `${FILES} jobs done`);
      const jobs = await allDone(ids);
      expect(
        jobs.every((j) => j.state === 'done' && j.result?.chunks_count === j.progress.chunks_total),
      ).toBe(true);
      // Every worker took a share.
      const shares = workers.map((w, i) => startedJobs(w.server.output).length - before[i]!);
      expect(
        shares.every((n) => n > 0),
        String(shares),
      ).toBe(true);
      expect(shares.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(FILES);
      // One version of each file in the index; the spool folder is empty again.
      const files = await filesOf('many');
      expect(files.size).toBe(FILES);
      for (const [fileId, points] of files) expect(versionsOf(points), fileId).toHaveLength(1);
      await spoolEmptied();
      expect(qdrant.violations).toEqual([]);
    }, 300_000);

    it('a worker killed (SIGKILL) mid-job: the job is re-queued and finished by another worker, one version', async () => {
      let release!: () => void;
      embed.faults.push({ kind: 'held', until: new Promise<void>((r) => (release = r)) });
      const res = await submit('orphan', 'The otter dives for crayfish among the reeds.');
      expect(res.status).toBe(202);
      const { job_id: id } = (await res.json()) as Job;
      await until(async () => (await job(id)).stage === 'embed', 'the job waits in its embedding stage');
      const victim = workers.find((w) => startedJobs(w.server.output, id).length > 0)!;
      expect(victim).toBeDefined();
      victim.server.child.kill('SIGKILL');
      await victim.server.stop();
      workers.splice(workers.indexOf(victim), 1);
      release();

      await until(async () => (await job(id)).state === 'done', 'the orphaned job finishes elsewhere');
      const done = await job(id);
      expect(done.attempts).toBeGreaterThanOrEqual(2);
      expect(workers.some((w) => startedJobs(w.server.output, id).length > 0)).toBe(true);
      const points = await pointsOf(index, 'orphan');
      expect(versionsOf(points)).toHaveLength(1);
      expect(points).toHaveLength(done.result!.chunks_count);
      expect(new Set(points.map((p) => p.id)).size).toBe(points.length);
      expect(qdrant.violations).toEqual([]);
    }, 180_000);

    it('Redis killed and restarted mid-run: 503 JOBS_UNAVAILABLE and readiness 503 while down, no acknowledged job lost', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await submit(`restart-${i}`, `Note ${i}. The heron returns to the marsh.`);
        expect(res.status).toBe(202);
        ids.push(((await res.json()) as Job).job_id);
      }
      const port = redis.port;
      await redis.stop();

      const refused = await submit('while-down', 'Submitted while Redis is down.');
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ status: false, code: 'JOBS_UNAVAILABLE' });
      const read = await fetch(`${api.url}/api/v1/jobs/${ids[0]}`, { headers: AUTH });
      expect(read.status).toBe(503);
      expect(await read.json()).toMatchObject({ status: false, code: 'JOBS_UNAVAILABLE' });
      const ready = await fetch(`${api.url}/health/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.text()).toContain('jobs');

      redis = await startRedis(port, { dir: redisDir });
      await until(async () => (await fetch(`${api.url}/health/ready`)).status === 200, 'ready again');
      await until(
        async () => (await Promise.all(ids.map(job))).every((j) => j.state === 'done'),
        'every acknowledged job finishes',
      );
      await allDone(ids);
      const files = await filesOf('jobs');
      for (let i = 0; i < 30; i++)
        expect(versionsOf(files.get(`restart-${i}`) ?? []), `restart-${i}`).toHaveLength(1);
      await spoolEmptied();
    }, 300_000);
  },
);
