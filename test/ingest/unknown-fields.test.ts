import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, pointsOf, startIngest } from './helpers/harness.js';

/**
 * A newer Open WebUI may send fields Kilde does not know (`metadata`, `process_mode`, …): the upload
 * must still be ingested, the fields logged at DEBUG; a known field of the wrong type is still a 400.
 */
let h: Harness;
beforeAll(async () => {
  h = await startIngest();
});
afterAll(() => h?.close());

const upload = (fields: Record<string, string>, extraFile = false) => {
  const m = multipartBody(
    { file_id: 'u-1', collection_name: 'kb', user_id: 'u1', ...fields },
    { name: 'notes.md', content: '# Notes\n\nThe ferry leaves at nine.', type: 'text/markdown' },
  );
  if (!extraFile) return m;
  // A second, unknown file part after the real one.
  const boundary = m.headers['content-type']!.split('boundary=')[1]!;
  const tail = `--${boundary}--\r\n`;
  const body = Buffer.concat([
    m.body.subarray(0, m.body.length - tail.length),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="thumbnail"; filename="t.png"\r\nContent-Type: image/png\r\n\r\nPNGDATA\r\n${tail}`,
    ),
  ]);
  return { body, headers: m.headers };
};

describe('fields Kilde does not know', () => {
  it('a multipart upload with unknown fields and parts is ingested; they are logged at DEBUG', async () => {
    const { body, headers } = upload({ metadata: '{"source":"chat"}', process_mode: 'fast' }, true);
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: true, chunks_count: 1 });
    expect(await pointsOf(h.index, 'u-1')).toHaveLength(1);
    const line = h.logs.lines.find((l) => l.msg === 'ignored unknown ingest field(s)');
    expect(line).toMatchObject({ level: 20, fields: ['metadata', 'process_mode', 'thumbnail'] });
  });

  it('a JSON (object-storage) body with unknown fields gets past validation to the object fetch', async () => {
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: AUTH,
      payload: {
        s3_bucket: 'b',
        s3_key: 'k.md',
        file_id: 'j-1',
        collection_name: 'kb',
        user_id: 'u1',
        metadata: { a: 1 },
      },
    });
    // No object store runs here: the request was accepted and failed at the fetch, not at validation.
    expect(res.json().code).not.toBe('INVALID_REQUEST');
    expect(h.logs.lines.filter((l) => l.msg === 'ignored unknown ingest field(s)').at(-1)).toMatchObject({
      fields: ['metadata'],
    });
  });

  it('a known field of the wrong type is still refused', async () => {
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: AUTH,
      payload: {
        s3_bucket: 'b',
        s3_key: 'k.md',
        file_id: 'j-2',
        collection_name: 'kb',
        user_id: 'u1',
        overwrite: 3,
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'INVALID_REQUEST', error: expect.stringMatching(/overwrite/) });
  });
});
