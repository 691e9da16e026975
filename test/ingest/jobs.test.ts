import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Job } from '../../src/ingest/jobs/job.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { type Harness, multipartBody, pointsOf, startIngest } from './helpers/harness.js';

/**
 * The jobs API, the same cases on both queues: in-process (no REDIS_URL) and BullMQ on a real
 * `redis-server`: states, the SSE stream as bytes on the wire, cancel, 404s, and retries only for
 * retryable failures. Several processes, a killed worker and a restarted Redis: test/scale/jobs.test.ts.
 */
let embed: FakeEmbeddingsServer;
let h: Harness;
let spool: string;
let redis: RedisServer | undefined;

const TEXT = 'The grey heron stands in the marsh. It waits for fish near the reeds at dawn, then flies.';

function upload(
  fileId: string,
  content: string | Buffer = TEXT,
  name = `${fileId}.txt`,
  type = 'text/plain',
) {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: name, collection_name: 'jobs', user_id: 'u1' },
    { name, content, type },
  );
  return h.app.inject({
    method: 'POST',
    url: '/api/v1/jobs',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
}

async function submit(fileId: string, content?: string | Buffer, name?: string, type?: string): Promise<Job> {
  const res = await upload(fileId, content, name, type);
  expect(res.statusCode, res.body).toBe(202);
  return res.json() as Job;
}

/** The whole event stream of a job (it ends after a terminal state), parsed from the bytes sent. */
async function events(id: string): Promise<{ raw: string; jobs: Job[]; contentType: string }> {
  const res = await h.app.inject({ method: 'GET', url: `/api/v1/jobs/${id}/events`, headers: AUTH });
  expect(res.statusCode).toBe(200);
  const raw = res.body;
  const blocks = raw.split('\n\n').filter((b) => b.startsWith('event:'));
  const jobs = blocks.map((b) => {
    const [event, data, ...rest] = b.split('\n');
    expect(event).toBe('event: job');
    expect(rest).toEqual([]);
    return JSON.parse((data ?? '').replace(/^data: /, '')) as Job;
  });
  return { raw, jobs, contentType: String(res.headers['content-type']) };
}

async function getJob(id: string) {
  return h.app.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: AUTH });
}

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
});
afterAll(async () => {
  await embed.close();
});

const QUEUES = [
  { kind: 'in-process', title: 'the in-process queue', redis: false, skip: false },
  {
    kind: 'redis',
    title: redisSuite('BullMQ on redis-server'),
    redis: true,
    skip: REDIS_SERVER_MISSING !== undefined,
  },
] as const;

for (const queue of QUEUES) {
  describe.skipIf(queue.skip)(`jobs on ${queue.title}`, () => {
    beforeAll(async () => {
      if (queue.redis) redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.stop();
      redis = undefined;
    });

    beforeEach(async () => {
      await redis?.client.flushall();
      spool = await mkdtemp(join(tmpdir(), 'kilde-spool-test-'));
      h = await startIngest({
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_API_BASE_URL: embed.baseUrl,
        EMBEDDING_MODEL: 'fake-embed',
        EMBEDDING_DIM: '16',
        EMBEDDING_MAX_RETRIES: '0',
        CHUNK_SPLIT_BY: 'word',
        CHUNK_SIZE: '8',
        CHUNK_OVERLAP: '0',
        JOBS_CONCURRENCY: '1',
        JOBS_MAX_ATTEMPTS: '3',
        // No wait between attempts: the retry rule is what is tested here, not the back-off.
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

    describe('POST /api/v1/jobs', () => {
      it('answers 202 queued, streams every stage as SSE, ends with the PUT body as its result', async () => {
        const job = await submit('heron');
        expect(job).toMatchObject({
          state: 'queued',
          stage: null,
          file_id: 'heron',
          collection_name: 'jobs',
          name: 'heron.txt',
          started_at: null,
          finished_at: null,
          progress: { chunks_total: null, chunks_done: 0 },
          attempts: 0,
          result: null,
          error: null,
        });
        expect(Date.parse(job.created_at)).not.toBeNaN();

        const stream = await events(job.job_id);
        expect(stream.contentType).toMatch(/^text\/event-stream/);
        const last = stream.jobs.at(-1)!;
        expect(last.state).toBe('done');
        expect(stream.jobs.slice(0, -1).every((j) => j.state !== 'done')).toBe(true);
        // The stream may start after the job did; whatever it saw of the run is in pipeline order.
        const stages = stream.jobs.map((j) => j.stage).filter((s) => s !== null);
        const order = ['upload', 'convert', 'chunk', 'embed', 'sparse', 'write'];
        expect(stages.map((s) => order.indexOf(s))).toEqual([...stages.map((s) => order.indexOf(s))].sort());

        const points = await pointsOf(h.index, 'heron');
        expect(last).toMatchObject({
          attempts: 1,
          stage: null,
          error: null,
          progress: { chunks_total: points.length, chunks_done: points.length },
          result: {
            status: true,
            collection_name: 'jobs',
            chunks_count: points.length,
            extraction: { engine: 'inprocess' },
          },
        });
        expect(Date.parse(last.finished_at!)).toBeGreaterThanOrEqual(Date.parse(last.started_at!));

        // The same job by id; its upload is gone from the spool folder.
        expect((await getJob(job.job_id)).json()).toEqual(last);
        await spoolEmptied();
        // A finished job's stream: one event (the current state), then the end.
        const again = await events(job.job_id);
        expect(again.jobs).toEqual([last]);
      });

      it('reports every stage and chunk count to a stream opened before the job runs', async () => {
        let release!: () => void;
        let releaseSecond!: () => void;
        embed.faults.push(
          { kind: 'held', until: new Promise<void>((r) => (release = r)) },
          { kind: 'held', until: new Promise<void>((r) => (releaseSecond = r)) },
        );
        const first = await submit('first');
        const second = await submit('second');
        const watching = events(second.job_id);
        // The first job holds the only worker until its embedding call is released.
        await eventually(async () => (await getJob(first.job_id)).json().stage === 'embed');
        release();
        // The second one stops in its embedding stage until released.
        await eventually(async () => (await getJob(second.job_id)).json().stage === 'embed');
        releaseSecond();
        const stream = await watching;
        expect(stream.jobs[0]).toMatchObject({ state: 'queued', stage: null });
        const running = stream.jobs.filter((j) => j.state === 'running');
        const all = ['upload', 'convert', 'chunk', 'embed', 'sparse', 'write'];
        if (queue.redis) {
          // Changes travel through a Redis stream and are read back: quick stages may merge, but
          // what is seen comes in pipeline order.
          const seen = running.map((j) => j.stage).filter((x) => x !== null);
          expect(seen).toContain('embed');
          expect(seen.map((x) => all.indexOf(x))).toEqual(seen.map((x) => all.indexOf(x)).sort());
        } else {
          expect(running.map((j) => j.stage)).toEqual(all);
        }
        const total = stream.jobs.at(-1)!.result!.chunks_count;
        expect(running.find((j) => j.stage === 'embed')!.progress).toEqual({
          chunks_total: total,
          chunks_done: 0,
        });
        expect(stream.jobs.at(-1)!.progress).toEqual({
          chunks_total: total,
          chunks_done: total,
        });
      });

      it('lists recent jobs newest first and filters by state', async () => {
        const a = await submit('list-a');
        const b = await submit('list-b');
        await events(a.job_id);
        await events(b.job_id);
        const bad = await submit(
          'list-bad',
          Buffer.from('%PDF-1.7 not really'),
          'bad.pdf',
          'application/pdf',
        );
        await events(bad.job_id);
        const all = (await h.app.inject({ method: 'GET', url: '/api/v1/jobs', headers: AUTH })).json();
        expect(all.jobs.map((j: Job) => j.file_id)).toEqual(['list-bad', 'list-b', 'list-a']);
        const failed = await h.app.inject({
          method: 'GET',
          url: '/api/v1/jobs?state=failed&limit=5',
          headers: AUTH,
        });
        expect(failed.json().jobs.map((j: Job) => j.file_id)).toEqual(['list-bad']);
        const one = await h.app.inject({ method: 'GET', url: '/api/v1/jobs?limit=1', headers: AUTH });
        expect(one.json().jobs).toHaveLength(1);
        const wrong = await h.app.inject({
          method: 'GET',
          url: '/api/v1/jobs?state=sleeping',
          headers: AUTH,
        });
        expect(wrong.statusCode).toBe(422);
        expect(wrong.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
      });

      it('cancels a queued job (never run, upload removed) and refuses to cancel a running one', async () => {
        let release!: () => void;
        embed.faults.push({ kind: 'held', until: new Promise<void>((r) => (release = r)) });
        const running = await submit('runs');
        const queued = await submit('waits');
        await eventually(async () => (await getJob(running.job_id)).json().state === 'running');

        const cancel = await h.app.inject({
          method: 'DELETE',
          url: `/api/v1/jobs/${queued.job_id}`,
          headers: AUTH,
        });
        expect(cancel.statusCode).toBe(200);
        expect(cancel.json()).toMatchObject({ job_id: queued.job_id, state: 'cancelled', attempts: 0 });
        expect(cancel.json().finished_at).not.toBeNull();

        const refused = await h.app.inject({
          method: 'DELETE',
          url: `/api/v1/jobs/${running.job_id}`,
          headers: AUTH,
        });
        expect(refused.statusCode).toBe(409);
        expect(refused.json()).toMatchObject({ status: false, code: 'JOB_NOT_CANCELLABLE' });

        release();
        expect((await events(running.job_id)).jobs.at(-1)!.state).toBe('done');
        expect((await events(queued.job_id)).jobs).toMatchObject([{ state: 'cancelled' }]);
        expect(await pointsOf(h.index, 'waits')).toEqual([]);
        await spoolEmptied();
        const done = await h.app.inject({
          method: 'DELETE',
          url: `/api/v1/jobs/${running.job_id}`,
          headers: AUTH,
        });
        expect(done.statusCode).toBe(409);
      });

      it('answers 404 JOB_NOT_FOUND for an unknown job on every route, and 401 without the key', async () => {
        for (const [method, url] of [
          ['GET', '/api/v1/jobs/nope'],
          ['GET', '/api/v1/jobs/nope/events'],
          ['DELETE', '/api/v1/jobs/nope'],
        ] as const) {
          const res = await h.app.inject({ method, url, headers: AUTH });
          expect(res.statusCode, url).toBe(404);
          expect(res.json()).toEqual({ status: false, error: 'No job "nope"', code: 'JOB_NOT_FOUND' });
        }
        const anonymous = await h.app.inject({ method: 'GET', url: '/api/v1/jobs' });
        expect(anonymous.statusCode).toBe(401);
      });

      it('refuses a bad submission before queueing it (nothing spooled)', async () => {
        const { body, headers } = multipartBody(
          { file_id: 'x', collection_name: 'file-other', user_id: 'u1' },
          { name: 'x.txt', content: TEXT, type: 'text/plain' },
        );
        const res = await h.app.inject({
          method: 'POST',
          url: '/api/v1/jobs',
          headers: { ...AUTH, ...headers },
          payload: body,
        });
        expect(res.statusCode).toBe(403);
        expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
        const json = await h.app.inject({
          method: 'POST',
          url: '/api/v1/jobs',
          headers: AUTH,
          payload: { file_id: 'x' },
        });
        expect(json.statusCode).toBe(400);
        expect(json.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
        await spoolEmptied();
        expect(
          (await h.app.inject({ method: 'GET', url: '/api/v1/jobs', headers: AUTH })).json().jobs,
        ).toEqual([]);
      });
    });

    describe('retries', () => {
      it('retries a retryable failure: the embedding endpoint answers 429, then 200', async () => {
        embed.faults.push({ kind: 'status', status: 429 });
        const job = await submit('busy');
        const stream = await events(job.job_id);
        const last = stream.jobs.at(-1)!;
        expect(last).toMatchObject({ state: 'done', attempts: 2, error: null });
        // Between the two runs the in-process queue shows the job queued again with the reason; BullMQ
        // retries at once with no back-off, so a reader may not see that moment.
        if (!queue.redis) {
          expect(
            stream.jobs.some((j) => j.state === 'queued' && j.last_error?.code === 'EMBEDDING_FAILED'),
          ).toBe(true);
        }
        expect(embed.embeddingRequests().length).toBe(2);
        expect(
          h.logs.lines.some(
            (l) => l.msg === 'ingestion job failed; retrying' && l.code === 'EMBEDDING_FAILED',
          ),
        ).toBe(true);
      });

      it('gives up after JOBS_MAX_ATTEMPTS retryable failures', async () => {
        embed.always = { kind: 'status', status: 503 };
        const job = await submit('down');
        const last = (await events(job.job_id)).jobs.at(-1)!;
        expect(last).toMatchObject({
          state: 'failed',
          attempts: 3,
          error: { code: 'EMBEDDING_FAILED', message: 'Embedding failed' },
        });
        expect(embed.embeddingRequests().length).toBe(3);
        await spoolEmptied();
      });

      it('never retries a corrupt file', async () => {
        const job = await submit('corrupt', Buffer.from('%PDF-1.7 broken'), 'corrupt.pdf', 'application/pdf');
        const last = (await events(job.job_id)).jobs.at(-1)!;
        expect(last).toMatchObject({ state: 'failed', attempts: 1, error: { code: 'EXTRACTION_FAILED' } });
        expect(embed.embeddingRequests()).toEqual([]);
      });
    });
  });
}

/**
 * The spool folder empties once each job's end is recorded (BullMQ: after its completed or failed
 * event, so a moment after the stream ended).
 */
async function spoolEmptied() {
  await eventually(async () => (await readdir(spool)).length === 0);
}
