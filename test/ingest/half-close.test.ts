import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadsRoot } from '../../src/ingest/temp-dir.js';
import { type Harness, startIngest } from './helpers/harness.js';

/*
 * A multipart upload whose client half-closes its socket mid-body (ends its writing side, still
 * reading; issue #31): the fuzz run left 79 empty upload folders and as many requests unanswered
 * until restart. Over a real socket, since only a real socket can half-close.
 */
let h: Harness;
let port: number;
let spool: string;
beforeAll(async () => {
  spool = await mkdtemp(join(tmpdir(), 'kilde-half-close-spool-'));
  h = await startIngest({ JOBS_SPOOL_DIR: spool });
  port = Number(new URL(await h.app.listen({ port: 0, host: '127.0.0.1' })).port);
});
afterAll(async () => {
  await h?.close();
  await rm(spool, { recursive: true, force: true });
});

/** Polls `check` (a bounded number of times; nothing here measures time). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never happened: ${what}`);
}

/** This process's upload folders now. */
async function ourUploadFolders(): Promise<string[]> {
  const names = await readdir(uploadsRoot()).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(`${process.pid}-`));
}

/** Waits until `folders()` equals `before` on several polls in a row (a folder may be made just after the 400). */
async function backTo(what: string, folders: () => Promise<string[]>, before: string[]): Promise<void> {
  let steady = 0;
  await until(what, async () => {
    const now = await folders();
    steady = JSON.stringify(now.sort()) === JSON.stringify([...before].sort()) ? steady + 1 : 0;
    return steady >= 10;
  });
  expect(await folders()).toEqual(before);
}

/** Sends `head` and the start of a body, half-closes, and resolves with all the server then sends. */
function halfClose(path: string, method: string, extraHeaders: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      answer += d;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    socket.on('connect', () => {
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer test-key\r\n${extraHeaders}\r\n${body}`,
      );
      socket.end();
    });
  });
}

const B = 'halfclose0';
const START =
  `--${B}\r\nContent-Disposition: form-data; name="file_id"\r\n\r\nf1\r\n` +
  `--${B}\r\nContent-Disposition: form-data; name="collection_name"\r\n\r\nkb-half\r\n` +
  `--${B}\r\nContent-Disposition: form-data; name="user_id"\r\n\r\nu1\r\n` +
  `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\nContent-Type: text/markdown\r\n\r\n` +
  '# Title\n\nThe first bytes of a file whose rest never comes.\n';

describe('a multipart upload whose client half-closes mid-body', () => {
  it.each([
    ['with Content-Length', `Content-Length: ${START.length + 5000}\r\n`],
    ['chunked', 'Transfer-Encoding: chunked\r\n'],
  ])('%s: answered 400 and no upload folder is left', async (_name, framing) => {
    const before = await ourUploadFolders();
    const body = framing.startsWith('Transfer') ? `${START.length.toString(16)}\r\n${START}\r\n` : START;
    const answer = await halfClose(
      '/api/v1/ingest',
      'PUT',
      `Content-Type: multipart/form-data; boundary=${B}\r\n${framing}`,
      body,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    // The request's handler ends too (its folder is removed as it does): before the fix it never did.
    await backTo('the upload folder is removed', ourUploadFolders, before);
  });

  it('a job batch: answered 400 and its spool folder is removed', async () => {
    const spoolFolders = () => readdir(spool).catch(() => [] as string[]);
    const before = await spoolFolders();
    const body =
      `--${B}\r\nContent-Disposition: form-data; name="collection_name"\r\n\r\nkb-half\r\n` +
      `--${B}\r\nContent-Disposition: form-data; name="user_id"\r\n\r\nu1\r\n` +
      `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\nContent-Type: text/markdown\r\n\r\n` +
      '# Title\n\nThe first bytes of a batch whose rest never comes.\n';
    const answer = await halfClose(
      '/api/v1/job-batches',
      'POST',
      `Content-Type: multipart/form-data; boundary=${B}\r\nContent-Length: ${body.length + 5000}\r\n`,
      body,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    await backTo('the batch spool folder is removed', spoolFolders, before);
  });
});
