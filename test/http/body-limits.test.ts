import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMITS } from '../../src/http/body-limits.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';

describe('JSON body limits per route', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startIngest();
  });
  afterAll(async () => {
    await h.close();
  });

  it('refuses an ingest JSON body over its limit with 413 before parsing it', async () => {
    const payload = JSON.stringify({
      bucket: 'b',
      key: 'k.md',
      file_id: 'f',
      collection_name: 'c',
      user_id: 'u',
      padding: 'x'.repeat(BODY_LIMITS.ingest),
    });
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload,
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
  });

  it('still takes a multipart upload far larger than the JSON limit', async () => {
    const text = `# Big\n\n${'Ordinary words in a long upload. '.repeat(8000)}`;
    expect(text.length).toBeGreaterThan(BODY_LIMITS.ingest * 3);
    const form = new FormData();
    form.set('file', new Blob([text], { type: 'text/markdown' }), 'big.md');
    form.set('file_id', 'big');
    form.set('collection_name', 'c');
    form.set('user_id', 'u');
    const req = new Request('http://x/', { method: 'PUT', body: form });
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, 'content-type': req.headers.get('content-type') ?? '' },
      payload: Buffer.from(await req.arrayBuffer()),
    });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('keeps kernel routes at the default limit', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/health',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(BODY_LIMITS.default) }),
    });
    expect(res.statusCode).toBe(413);
  });
});
