import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH } from '../helpers/app.js';
import { type Harness, startIngest } from './helpers/harness.js';

/** Found by the reliability fuzz: a body cut short inside a file part Kilde skips hung the request. */
let h: Harness;
beforeAll(async () => {
  h = await startIngest();
});
afterAll(async () => {
  await h?.close();
});

const cut = [
  '--b0\r\nContent-Disposition: form-data; name="file_id"\r\n\r\nf1\r\n',
  '--b0\r\nContent-Disposition: form-data; name="collection_name"\r\n\r\nkb-1\r\n',
  '--b0\r\nContent-Disposition: form-data; name="user_id"\r\n\r\nu1\r\n',
  '--b0\r\nContent-Disposition: form-data; name="upload"; filename="b.pdf"\r\nContent-Type: text/plain\r\n\r\n',
  '# Title\n\nSome text.\n\r\n',
].join('');

describe('a multipart body cut short inside a skipped file part', () => {
  it.each(['/api/v1/ingest', '/api/v1/extract'])('%s answers 400 (malformed), not never', async (url) => {
    const res = await h.app.inject({
      method: url.endsWith('ingest') ? 'PUT' : 'POST',
      url,
      headers: { ...AUTH, 'content-type': 'multipart/form-data; boundary=b0' },
      payload: cut,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/Malformed multipart body/);
  });
});
