import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../../src/ingest/jobs/job.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, startIngest } from './helpers/harness.js';

/**
 * What a client needs to show an upload truthfully (the console's upload screen): the stage a failed
 * job failed in, whether the server embeds at all, and both limits an upload must pass.
 */
let h: Harness;

beforeAll(async () => {
  h = await startIngest({ EXTRACTION_MAX_TEXT_CHARS: '1000' });
});
afterAll(() => h?.close());

async function job(name: string, content: string, type: string): Promise<Job> {
  const { body, headers } = multipartBody(
    { path: name, collection_name: 'feedback', user_id: 'u' },
    { name, content, type },
  );
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/v1/jobs',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(202);
  const { job_id } = res.json() as Job;
  for (;;) {
    const now = (
      await h.app.inject({ method: 'GET', url: `/api/v1/jobs/${job_id}`, headers: AUTH })
    ).json() as Job;
    if (now.state === 'done' || now.state === 'failed') return now;
    await new Promise((r) => setImmediate(r));
  }
}

describe('upload feedback', () => {
  it('a failed job says the stage it failed in', async () => {
    const broken = await job('broken.pdf', '%PDF-1.7 not a PDF body', 'application/pdf');
    expect(broken.state).toBe('failed');
    expect(broken.error).toMatchObject({ code: 'EXTRACTION_FAILED', stage: 'convert' });
    // Over the text limit: also a failure of extraction, with the limit in its message.
    const long = await job('long.txt', 'word '.repeat(400), 'text/plain');
    expect(long.state).toBe('failed');
    expect(long.error?.stage).toBe('convert');
    expect(long.error?.message).toContain('1,000 characters');
  });

  it('GET /api/v1/info gives both limits and whether chunks are embedded', async () => {
    const info = await h.app.inject({ method: 'GET', url: '/api/v1/info', headers: AUTH });
    expect(info.json().ingest).toMatchObject({
      max_upload_bytes: h.config.MAX_UPLOAD_BYTES,
      max_text_chars: 1000,
      dense: false,
      sparse: true,
    });
  });
});
