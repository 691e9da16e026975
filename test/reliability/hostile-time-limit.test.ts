import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../helpers/clock.js';
import { writePdf } from './hostile-documents.js';
import { type HostileServer, LONG, startServer, upload, whileRunning } from './hostile-server.js';

/*
 * A document that keeps a worker busy: a long PDF under a raised page limit. While the worker reads
 * it, health, readiness and search must keep answering; then the (manual) clock passes
 * EXTRACTION_TIMEOUT and the worker is stopped, replaced, and the upload gets EXTRACTION_FAILED.
 * Nothing here waits on or asserts the wall clock: requests are counted, time is advanced by hand.
 */
const clock = new ManualClock();
let server: HostileServer;
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-hostile-time-'));
  server = await startServer({ EXTRACTION_MAX_PAGES: '1000000', EXTRACTION_WORKERS: '1' }, clock);
});

afterAll(async () => {
  await server?.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('a document that runs past EXTRACTION_TIMEOUT', () => {
  it('leaves health, readiness and search answering while it runs, then fails cleanly', async () => {
    const path = join(tmp, 'long.pdf');
    await writePdf(path, LONG ? 100_000 : 10_000);
    let fired = false;
    const { result, during } = await whileRunning(server, upload(server, path), (seen) => {
      // The worker has started the task (its time limit is armed) and the loop has answered
      // plenty of requests meanwhile: now let the limit pass.
      if (!fired && clock.pending > 0 && seen.health >= 20 && seen.ready >= 20 && seen.search >= 20) {
        fired = true;
        clock.advance(300_000);
      }
    });
    expect(fired).toBe(true);
    expect(during.health).toBeGreaterThanOrEqual(20);
    expect(during.search).toBeGreaterThanOrEqual(20);
    expect(during.failed, JSON.stringify(during.failures)).toBe(0);
    expect(result.status, JSON.stringify(result.body)).toBe(422);
    expect(result.body).toMatchObject({ code: 'EXTRACTION_FAILED' });
    expect(result.body.error).toBe(
      'Document exceeds an extraction limit: processing took longer than 300 s (EXTRACTION_TIMEOUT)',
    );
    expect(server.logs.text()).toContain('worker task over its time limit: worker replaced');
  });

  it('the replaced worker takes the next document', async () => {
    const path = join(tmp, 'short.pdf');
    await writePdf(path, 3);
    const ok = await upload(server, path);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.chunks_count).toBeGreaterThan(0);
  });
});
