import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fileIdFor } from '../../src/index/identifiers.js';
import type { BatchFile, JobBatch } from '../../src/ingest/jobs/batch.js';
import { heldBytes } from '../../src/ingest/jobs/batch-held.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { type Harness, multipartBody, pointsOf, startIngest, versionsOf } from './helpers/harness.js';

/**
 * Job batches (`POST /api/v1/job-batches`) on both queues: many files in one multipart request, each
 * settling on its own (a corrupt file, a refused name, a file over MAX_UPLOAD_BYTES fail alone),
 * the event stream as bytes on the wire, rows in the index, whole-request refusals (auth, fields,
 * bounds) that queue nothing, and a retried batch that runs only its unfinished files. A killed
 * worker mid-batch: test/scale/job-batches.test.ts.
 */
let embed: FakeEmbeddingsServer;
let h: Harness;
let spool: string;
let redis: RedisServer | undefined;

const TEXT = 'The grey heron stands in the marsh. It waits for fish near the reeds at dawn, then flies.';
const MAX_UPLOAD = 4000;

type Part = { name: string; content: string | Buffer; type?: string };

function post(fields: Record<string, string>, files: Part[], auth: Record<string, string> = AUTH) {
  const { body, headers } = multipartBody(
    fields,
    files.map((f) => ({ ...f, type: f.type ?? 'text/plain' })),
  );
  return h.app.inject({
    method: 'POST',
    url: '/api/v1/job-batches',
    headers: { ...auth, ...headers },
    payload: body,
  });
}

const shared = { collection_name: 'batch', user_id: 'u1' };

/** The whole event stream of a batch (it ends once the batch has), parsed from the bytes sent. */
async function events(id: string): Promise<{ names: string[]; batches: JobBatch[]; files: BatchFile[] }> {
  const res = await h.app.inject({ method: 'GET', url: `/api/v1/job-batches/${id}/events`, headers: AUTH });
  expect(res.statusCode).toBe(200);
  expect(String(res.headers['content-type'])).toMatch(/^text\/event-stream/);
  const blocks = res.body.split('\n\n').filter((b) => b.startsWith('event:'));
  const parsed = blocks.map((b) => {
    const [event, data] = b.split('\n');
    return {
      name: (event ?? '').slice('event: '.length),
      data: JSON.parse((data ?? '').slice('data: '.length)),
    };
  });
  return {
    names: parsed.map((p) => p.name),
    batches: parsed.filter((p) => p.name === 'batch').map((p) => p.data as JobBatch),
    files: parsed.filter((p) => p.name === 'file').map((p) => p.data as BatchFile),
  };
}

async function spoolEmptied() {
  await eventually(async () => (await readdir(spool)).length === 0);
}

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
});
afterAll(async () => {
  await embed.close();
});

const QUEUES = [
  { title: 'the in-process queue', redis: false, skip: false },
  { title: redisSuite('BullMQ on redis-server'), redis: true, skip: REDIS_SERVER_MISSING !== undefined },
] as const;

for (const queue of QUEUES) {
  describe.skipIf(queue.skip)(`job batches on ${queue.title}`, () => {
    beforeAll(async () => {
      if (queue.redis) redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.stop();
      redis = undefined;
    });
    beforeEach(async () => {
      await redis?.client.flushall();
      spool = await mkdtemp(join(tmpdir(), 'kilde-batch-spool-'));
      h = await startIngest({
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_API_BASE_URL: embed.baseUrl,
        EMBEDDING_MODEL: 'fake-embed',
        EMBEDDING_DIM: '16',
        EMBEDDING_MAX_RETRIES: '0',
        CHUNK_SPLIT_BY: 'word',
        CHUNK_SIZE: '8',
        CHUNK_OVERLAP: '0',
        MAX_UPLOAD_BYTES: String(MAX_UPLOAD),
        JOBS_BATCH_MAX_FILES: '5',
        JOBS_MAX_ATTEMPTS: '3',
        JOBS_BACKOFF_MS: '0',
        JOBS_SPOOL_DIR: spool,
        ...(redis ? { REDIS_URL: redis.url, LOCK_LEASE_MS: '5000', LOCK_RETRY_MS: '20' } : {}),
      });
      embed.reset();
    });
    afterEach(async () => {
      embed.reset();
      await h.close();
      await rm(spool, { recursive: true, force: true });
    });

    it('ingests each file on its own: a corrupt file, a refused name and a file over MAX_UPLOAD_BYTES fail alone', async () => {
      const files = JSON.stringify([
        { file_id: 'heron', filename: 'heron.txt' },
        { path: 'birds/wren.md' },
        { file_id: 'broken', filename: 'broken.pdf' },
        { file_id: 'bad\u0001id' },
        { file_id: 'huge', filename: 'huge.txt' },
      ]);
      // Embedding held, so the batch is seen running before it ends.
      let release!: () => void;
      embed.faults.push({ kind: 'held', until: new Promise<void>((r) => (release = r)) });
      const res = await post({ ...shared, files }, [
        { name: 'heron.txt', content: TEXT },
        {
          name: 'wren.md',
          content: '# Wren\n\nThe wren sings in the hedge at dawn and at dusk.\n',
          type: 'text/markdown',
        },
        { name: 'broken.pdf', content: '%PDF-1.7 this is not a PDF', type: 'application/pdf' },
        { name: 'odd.txt', content: TEXT },
        { name: 'huge.txt', content: 'x '.repeat(MAX_UPLOAD) },
      ]);
      expect(res.statusCode, res.body).toBe(202);
      const queued = res.json() as JobBatch;
      expect(queued).toMatchObject({ state: 'queued', collection_name: 'batch', attempts: 0 });
      expect(queued.counts).toEqual({ files: 5, queued: 3, running: 0, done: 0, failed: 2 });
      expect(queued.files[3]).toMatchObject({ state: 'failed', error: { code: 'INVALID_REQUEST' } });
      expect(queued.files[3]!.error!.message).toMatch(/file_id/);
      expect(queued.files[4]).toMatchObject({
        file_id: 'huge',
        state: 'failed',
        error: { code: 'INVALID_REQUEST' },
      });
      expect(queued.files[4]!.error!.message).toContain('MAX_UPLOAD_BYTES');

      const streamed = events(queued.batch_id);
      await eventually(async () => {
        const now = await h.app.inject({
          method: 'GET',
          url: `/api/v1/job-batches/${queued.batch_id}`,
          headers: AUTH,
        });
        return (now.json() as JobBatch).counts.running > 0;
      });
      release();
      const stream = await streamed;
      expect(stream.names[0]).toBe('batch');
      expect(stream.names.at(-1)).toBe('batch');
      expect(stream.files.filter((f) => f.index === 0).map((f) => f.state)).toContain('done');
      const end = stream.batches.at(-1)!;
      expect(end.state).toBe('done');
      expect(end.counts).toEqual({ files: 5, queued: 0, running: 0, done: 2, failed: 3 });
      const wrenId = fileIdFor('batch', 'birds/wren.md');
      expect(end.files.map((f) => [f.file_id, f.state])).toEqual([
        ['heron', 'done'],
        [wrenId, 'done'],
        ['broken', 'failed'],
        ['', 'failed'],
        ['huge', 'failed'],
      ]);
      expect(end.files[0]!.result).toMatchObject({ status: true, collection_name: 'batch', chunks_count: 3 });
      expect(end.files[2]!.error!.code).toBe('EXTRACTION_FAILED');
      // Rows in the index: one live version of each good file, nothing of the others.
      const heron = await pointsOf(h.index, 'heron');
      expect(heron.map((p) => p.meta.split_id)).toEqual([0, 1, 2]);
      expect(versionsOf(heron)).toHaveLength(1);
      expect((await pointsOf(h.index, wrenId))[0]!.meta.source).toBe('birds/wren.md');
      expect(await pointsOf(h.index, 'broken')).toEqual([]);
      expect(await pointsOf(h.index, 'huge')).toEqual([]);
      const got = await h.app.inject({
        method: 'GET',
        url: `/api/v1/job-batches/${queued.batch_id}`,
        headers: AUTH,
      });
      expect(got.json()).toEqual(end);
      await spoolEmptied();
    });

    it('a file named by its path again is a new version of the same document', async () => {
      const files = JSON.stringify([{ path: 'docs/a.md', legacy_path: 'docs/a.md' }]);
      for (const text of [
        '# A\n\nfirst text of the document a\n',
        '# A\n\nsecond text of the document a\n',
      ]) {
        const res = await post({ ...shared, files }, [{ name: 'a.md', content: text }]);
        expect(res.statusCode, res.body).toBe(202);
        const end = (await events((res.json() as JobBatch).batch_id)).batches.at(-1)!;
        expect(end.files[0]).toMatchObject({ file_id: fileIdFor('batch', 'docs/a.md'), state: 'done' });
      }
      const points = await pointsOf(h.index, fileIdFor('batch', 'docs/a.md'));
      expect(versionsOf(points)).toHaveLength(1);
      expect(points.map((p) => p.content).join(' ')).toContain('second');
    });

    it('runs only the unfinished files again after a retryable failure', async () => {
      embed.faults.push({ kind: 'status', status: 503 });
      const res = await post(shared, [{ name: 'otter.txt', content: TEXT }]);
      expect(res.statusCode, res.body).toBe(202);
      const end = (await events((res.json() as JobBatch).batch_id)).batches.at(-1)!;
      expect(end).toMatchObject({ state: 'done', attempts: 2 });
      expect(end.files[0]).toMatchObject({ file_id: fileIdFor('batch', 'otter.txt'), state: 'done' });
      expect(h.logs.lines.some((l) => l.msg === 'job batch: files failed retryably; retrying them')).toBe(
        true,
      );
    });

    it('refuses a whole request that breaks the rules, and queues nothing of it', async () => {
      const one = [{ name: 'a.txt', content: TEXT }];
      expect((await post(shared, one, {})).statusCode).toBe(401);
      const noUser = await post({ collection_name: 'batch' }, one);
      expect(noUser.statusCode).toBe(400);
      expect(noUser.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
      const many = Array.from({ length: 6 }, (_, i) => ({ name: `f${i}.txt`, content: TEXT }));
      const tooMany = await post(shared, many);
      expect(tooMany.statusCode).toBe(413);
      expect(tooMany.json().error).toContain('JOBS_BATCH_MAX_FILES');
      const mismatch = await post(
        { ...shared, files: JSON.stringify([{ file_id: 'a' }, { file_id: 'b' }]) },
        one,
      );
      expect(mismatch.statusCode).toBe(400);
      const badEntries = await post({ ...shared, files: '[{"file_id": 3}]' }, one);
      expect(badEntries.statusCode).toBe(400);
      expect(badEntries.json().error).toContain('files[0.file_id]');
      expect((await post(shared, [])).statusCode).toBe(400);
      const json = await h.app.inject({
        method: 'POST',
        url: '/api/v1/job-batches',
        headers: AUTH,
        payload: { collection_name: 'batch' },
      });
      expect(json.statusCode).toBe(415);
      const missing = await h.app.inject({ method: 'GET', url: '/api/v1/job-batches/nope', headers: AUTH });
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toMatchObject({ code: 'JOB_NOT_FOUND' });
      expect(await readdir(spool)).toEqual([]);
      expect(await h.index.count({ collectionNames: ['batch'] })).toBe(0);
      // Nothing of the refused requests is kept in memory either.
      expect(heldBytes()).toBe(0);
    });

    it(
      queue.redis
        ? 'spools every file before the 202 (another worker may run the batch)'
        : 'keeps small files in memory until the batch ends: nothing spooled',
      async () => {
        let release!: () => void;
        embed.faults.push({ kind: 'held', until: new Promise<void>((r) => (release = r)) });
        const res = await post({ ...shared, files: JSON.stringify([{ file_id: 'm1' }, { file_id: 'm2' }]) }, [
          { name: 'one.txt', content: TEXT },
          {
            name: 'two.md',
            content: '# Two\n\nThe second small file of the batch.\n',
            type: 'text/markdown',
          },
        ]);
        expect(res.statusCode, res.body).toBe(202);
        const id = (res.json() as JobBatch).batch_id;
        const [folder] = await readdir(spool);
        const spooled = (await readdir(join(spool, folder!))).sort();
        if (queue.redis) {
          expect(spooled).toEqual(['0.txt', '1.md']);
          expect(heldBytes()).toBe(0);
        } else {
          expect(spooled).toEqual([]);
          expect(heldBytes()).toBeGreaterThan(TEXT.length);
        }
        release();
        const end = (await events(id)).batches.at(-1)!;
        expect(end.files.map((f) => [f.file_id, f.state])).toEqual([
          ['m1', 'done'],
          ['m2', 'done'],
        ]);
        expect((await pointsOf(h.index, 'm2')).map((p) => p.content).join(' ')).toContain(
          'second small file',
        );
        await spoolEmptied();
        expect(heldBytes()).toBe(0);
      },
    );
  });
}
