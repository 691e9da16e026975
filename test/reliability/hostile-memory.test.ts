import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostileServer, startServer, upload, whileRunning } from './hostile-server.js';

/*
 * A worker whose heap runs out is terminated by V8 and replaced; the document gets EXTRACTION_FAILED
 * naming EXTRACTION_MAX_HEAP_MB, and this process (which would die of the same document on its
 * main thread) goes on serving.
 */
let server: HostileServer;
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-hostile-heap-'));
  server = await startServer({ EXTRACTION_MAX_HEAP_MB: '64', EXTRACTION_WORKERS: '1' });
});

afterAll(async () => {
  await server?.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('a document that needs more than EXTRACTION_MAX_HEAP_MB', () => {
  it('fails cleanly, the process survives and health keeps answering', async () => {
    const path = join(tmp, 'huge.html');
    const paragraph = `<p>${'plenty of ordinary words in a very long page '.repeat(20)}</p>\n`;
    await writeFile(
      path,
      `<html><body>${paragraph.repeat(Math.ceil((40 * 1024 * 1024) / paragraph.length))}`,
    );
    const { result, during } = await whileRunning(server, upload(server, path));
    expect(result.status, JSON.stringify(result.body)).toBe(422);
    expect(result.body).toMatchObject({ code: 'EXTRACTION_FAILED' });
    expect(result.body.error).toBe(
      'Document exceeds an extraction limit: processing needed more than 64 MiB of memory (EXTRACTION_MAX_HEAP_MB)',
    );
    expect(during.failed, JSON.stringify(during.failures)).toBe(0);
    expect(server.logs.text()).toContain('worker out of memory: worker replaced');
  });

  it('the replaced worker takes the next document', async () => {
    await writeFile(join(tmp, 'small.md'), '# Small\n\nA small document after the big one.');
    const ok = await upload(server, join(tmp, 'small.md'));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });
});
