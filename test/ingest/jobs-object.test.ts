import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../../src/ingest/jobs/job.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, pointsOf, startIngest } from './helpers/harness.js';
import { type FakeS3, S3_KEYS, startS3 } from './helpers/s3.js';

/**
 * A job submitted as an object-store reference (the JSON body of `PUT /api/v1/ingest`): gated at
 * submission (bucket allowlist), fetched by the worker (stage `fetch`), and a missing object fails
 * the job with the synchronous route's code, without retries (a 404 is not retryable).
 */
let s3: FakeS3;
let h: Harness;

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('uploads');
  await s3.put('uploads', 'u1/notes.md', '# Notes\n\nThe ferry to Samsø leaves at nine.\n', 'text/markdown');
  h = await startIngest({
    OBJECTSTORE_ENDPOINT: s3.endpoint,
    OBJECTSTORE_ACCESS_KEY: S3_KEYS.accessKeyId,
    OBJECTSTORE_SECRET_KEY: S3_KEYS.secretAccessKey,
    OBJECTSTORE_ALLOWED_BUCKETS: 'uploads',
    JOBS_BACKOFF_MS: '0',
  });
});
afterAll(async () => {
  await h?.close();
  await s3?.close();
});

async function run(body: Record<string, unknown>): Promise<Job[]> {
  const res = await h.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: AUTH, payload: body });
  expect(res.statusCode, res.body).toBe(202);
  const events = await h.app.inject({
    method: 'GET',
    url: `/api/v1/jobs/${res.json().job_id}/events`,
    headers: AUTH,
  });
  return events.body
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Job);
}

describe('jobs with an object-store reference', () => {
  it('fetches the object on the worker and answers the PUT body as its result', async () => {
    const jobs = await run({
      s3_bucket: 'uploads',
      s3_key: 'u1/notes.md',
      file_id: 'notes',
      collection_name: 'kb',
      user_id: 'u1',
    });
    const last = jobs.at(-1)!;
    expect(last).toMatchObject({
      state: 'done',
      name: 'notes.md',
      attempts: 1,
      result: { status: true, collection_name: 'kb', chunks_count: 1 },
    });
    const points = await pointsOf(h.index, 'notes');
    expect(points.map((p) => p.meta.source)).toEqual(['s3://uploads/u1/notes.md']);
  });

  it('refuses a bucket outside the allowlist before queueing (403)', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/v1/jobs',
      headers: AUTH,
      payload: { s3_bucket: 'elsewhere', s3_key: 'x.md', file_id: 'x', collection_name: 'kb', user_id: 'u1' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
  });

  it('fails a job whose object does not exist with OBJECT_FETCH_FAILED, once', async () => {
    const jobs = await run({
      s3_bucket: 'uploads',
      s3_key: 'u1/missing.md',
      file_id: 'gone',
      collection_name: 'kb',
      user_id: 'u1',
    });
    expect(jobs.at(-1)).toMatchObject({
      state: 'failed',
      attempts: 1,
      error: { code: 'OBJECT_FETCH_FAILED' },
    });
  });
});
