import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_COLLECTION, type StoredPoint } from '../../src/index/contract.js';
import type { VectorIndex } from '../../src/index/store.js';
import type { JobBatch } from '../../src/ingest/jobs/batch.js';
import type { Server } from '../cli/helpers.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { openQdrant } from '../index/qdrant-target.js';
import { versionsOf } from '../ingest/helpers/harness.js';
import { processEnv, startProcess } from './processes.js';

/**
 * A job batch on BullMQ survives its worker: one real `redis-server`, one `kilde serve ingest`
 * taking batches (its own workers off), two `kilde serve worker` processes, the Qdrant fake over
 * HTTP. A worker is SIGKILLed with one pass of the batch done and another held in its embedding
 * call; the other worker runs the batch again from the files it had not finished, and every file
 * ends with one version.
 */
const FILES = 300;

let redis: RedisServer;
let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let index: VectorIndex;
let dataDir: string;
let spool: string;
let api: { server: Server; url: string };
const workers: { server: Server; url: string }[] = [];

function env(name: string, extra: Record<string, string> = {}) {
  const shared = { dataDir, qdrantUrl: qdrant.url, embedBaseUrl: embed.baseUrl, redisUrl: redis.url };
  return processEnv(shared, name, {
    LOCK_LEASE_MS: '3000',
    JOBS_SPOOL_DIR: spool,
    JOBS_MAX_ATTEMPTS: '5',
    JOBS_BACKOFF_MS: '200',
    // A dead worker's batch is queued again within about twice this (generous on a loaded machine).
    JOBS_STALLED_MS: '4000',
    ...extra,
  });
}

function batchBody(n: number): { body: Buffer; headers: Record<string, string> } {
  const boundary = `----kilde${Math.random().toString(16).slice(2)}`;
  const field = (k: string, v: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  const files = Array.from({ length: n }, (_, i) => ({ file_id: `b-${i}`, filename: `b-${i}.txt` }));
  const chunks = [
    field('collection_name', 'batch'),
    field('user_id', 'u1'),
    field('files', JSON.stringify(files)),
  ];
  for (let i = 0; i < n; i++) {
    chunks.push(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b-${i}.txt"\r\nContent-Type: text/plain\r\n\r\n` +
        `File ${i}. The wren sings in the hedge at dawn.\r\n`,
    );
  }
  chunks.push(`--${boundary}--\r\n`);
  return {
    body: Buffer.from(chunks.join('')),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

async function batch(id: string): Promise<JobBatch> {
  const res = await fetch(`${api.url}/api/v1/job-batches/${id}`, { headers: AUTH });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as JobBatch;
}

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

const lines = (output: string, msg: string, id?: string) =>
  output.split('\n').filter((l) => l.includes(`"msg":"${msg}"`) && (id === undefined || l.includes(id)));

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('job batches: a worker killed mid-batch, the batch finished by another'),
  () => {
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'kilde-batch-scale-'));
      spool = join(dataDir, 'spool');
      await mkdir(join(dataDir, 'redis'), { recursive: true });
      [redis, qdrant, embed] = await Promise.all([
        startRedis(undefined, { dir: join(dataDir, 'redis') }),
        startQdrantFake(),
        startFakeOpenAIEmbeddings({ dim: 16 }),
      ]);
      api = await startProcess(['serve', 'ingest'], env('api', { JOBS_WORKER_ENABLED: 'false' }));
      for (let i = 0; i < 2; i++) workers.push(await startProcess(['serve', 'worker'], env(`worker-${i}`)));
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

    it('SIGKILL with one pass done and one held: another worker runs only the unfinished files, one version each', async () => {
      // The batch's first two passes run together: the first answered, the second held.
      let release!: () => void;
      embed.faults.push(
        { kind: 'slow', delayMs: 0 },
        { kind: 'held', until: new Promise<void>((r) => (release = r)) },
      );
      const { body, headers } = batchBody(FILES);
      const res = await fetch(`${api.url}/api/v1/job-batches`, {
        method: 'POST',
        headers: { ...AUTH, ...headers },
        body: new Uint8Array(body),
      });
      expect(res.status, await res.clone().text()).toBe(202);
      const { batch_id: id } = (await res.json()) as JobBatch;
      // Bounded by the test's time-out: until a pass is done and another runs (held).
      await eventually(async () => {
        const b = await batch(id);
        return b.counts.done > 0 && b.counts.running > 0;
      });
      const victim = workers.find((w) => lines(w.server.output, 'job batch started', id).length > 0)!;
      expect(victim).toBeDefined();
      const doneBefore = (await batch(id)).counts.done;
      victim.server.child.kill('SIGKILL');
      await victim.server.stop();
      workers.splice(workers.indexOf(victim), 1);
      release();

      await eventually(async () => (await batch(id)).state === 'done');
      const end = await batch(id);
      expect(end.counts).toEqual({ files: FILES, queued: 0, running: 0, done: FILES, failed: 0 });
      expect(end.attempts).toBeGreaterThanOrEqual(2);
      const other = workers[0]!;
      expect(lines(other.server.output, 'job batch started', id).length).toBeGreaterThan(0);
      // The rerun ingested only what the killed worker had not finished.
      const rerun = lines(other.server.output, 'ingested').filter((l) => l.includes('"collection":"batch"'));
      expect(rerun.length).toBe(FILES - doneBefore);
      const files = await filesOf('batch');
      expect(files.size).toBe(FILES);
      for (const [fileId, points] of files) {
        expect(versionsOf(points), fileId).toHaveLength(1);
        expect(points.length).toBe(end.files.find((f) => f.file_id === fileId)!.result!.chunks_count);
      }
      await eventually(async () => (await readdir(spool)).length === 0);
      expect(qdrant.violations).toEqual([]);
    }, 300_000);
  },
);
