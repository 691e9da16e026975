import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH } from '../helpers/app.js';
import { type Harness, pointsOf, startIngest } from './helpers/harness.js';

// A private temp root for this worker, so the test can see every temp file the service leaves.
const privateTmp = await mkdtemp(join(tmpdir(), 'kilde-socket-'));
process.env.TMPDIR = privateTmp;

let h: Harness;
let base: URL;
beforeAll(async () => {
  h = await startIngest({
    MAX_UPLOAD_BYTES: String(2 * 1024 * 1024),
    CHUNK_SPLIT_BY: 'word',
    CHUNK_SIZE: '200',
    CHUNK_OVERLAP: '0',
  });
  const address = await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = new URL(address);
});
afterAll(async () => {
  await h?.close();
  await rm(privateTmp, { recursive: true, force: true });
});

const leftovers = async () => readdir(join(privateTmp, 'kilde-uploads')).catch(() => []);

/** Sends a multipart body over a real socket in small writes, as a slow client would. */
function send(fields: Record<string, string>, fileBytes: number): Promise<{ status: number; body: string }> {
  const boundary = 'kildeboundary42';
  const head = Object.entries(fields)
    .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
    .join('');
  const fileHead = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  return new Promise((resolve, reject) => {
    const req = request(
      new URL('/api/v1/ingest', base),
      { method: 'PUT', headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString('utf8');
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.write(head + fileHead);
    const line = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor\n';
    let sent = 0;
    const pump = () => {
      while (sent < fileBytes) {
        const piece = line.repeat(800).slice(0, fileBytes - sent);
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    pump();
  });
}

describe('multipart over a real socket', () => {
  it('streams a 1.5 MB upload to a temp file, ingests it and removes the temp file', async () => {
    const res = await send({ file_id: 'sock', collection_name: 'file-sock', user_id: 'u' }, 1_500_000);
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.chunks_count).toBeGreaterThan(100);
    expect(await pointsOf(h.index, 'sock')).toHaveLength(body.chunks_count);
    expect(await leftovers()).toEqual([]);
  });

  it('answers 413 once the stream passes MAX_UPLOAD_BYTES and leaves no temp file', async () => {
    const res = await send(
      { file_id: 'sock-big', collection_name: 'file-sock-big', user_id: 'u' },
      3 * 1024 * 1024,
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({
      status: false,
      error: `File exceeds MAX_UPLOAD_BYTES (${2 * 1024 * 1024} bytes)`,
      code: 'INVALID_REQUEST',
    });
    expect(await h.index.count({ fileId: 'sock-big' })).toBe(0);
    expect(await leftovers()).toEqual([]);
  });
});
