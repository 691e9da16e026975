import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { IngestOutcome } from '../../src/ingest/service.js';
import type { PipelineProgress } from '../../src/ingest/stages.js';
import { makePdf } from '../helpers/make-pdf.js';
import { REDIS_SERVER_MISSING, redisSuite } from '../helpers/redis.js';
import { redisForSuite } from '../helpers/redis-suite.js';
import { pointsOf, versionsOf } from './helpers/harness.js';
import { chunkShape, handbook, SMALL_CHUNKS_ENV, serviceFixture } from './helpers/service-fixture.js';

/**
 * Concurrent `IngestService.ingest` calls (uploads, jobs) of small files share pipeline passes
 * (src/ingest/pass-queue.ts): a file that arrives while others are in flight joins the next pass,
 * and still settles exactly as it would alone — its own chunks, version, error, cancellation and
 * progress.
 */
const C = 'shared';
const text = handbook;

const f = serviceFixture();

async function ingest(
  fileId: string,
  content: string | Buffer,
  o: {
    ext?: string;
    collection?: string;
    signal?: AbortSignal;
    onProgress?: (p: PipelineProgress) => void;
  } = {},
): Promise<IngestOutcome> {
  const ext = o.ext ?? 'txt';
  const path = join(f.dir, `${fileId}-${Math.random().toString(16).slice(2)}.${ext}`);
  await writeFile(path, content);
  const filename = `${fileId}.${ext}`;
  return f.service.ingest(
    {
      fileId,
      filename,
      collectionName: o.collection ?? C,
      collectionType: 'file',
      userId: 'u1',
      overwrite: true,
      source: filename,
    },
    async () => ({ path, filename, bytes: Buffer.byteLength(content) }),
    o.signal,
    o.onProgress ? { onProgress: o.onProgress } : {},
  );
}

const shape = chunkShape;

const ingestedLines = () => f.h.logs.lines.filter((l) => l.msg === 'ingested');

/** An ingest that runs alone; resolves once it is running, so the next ones join shared passes. */
async function leading(fileId: string): Promise<{ done: Promise<IngestOutcome> }> {
  let running: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    running = resolve;
  });
  const done = ingest(fileId, text(fileId, 40), { onProgress: () => running() });
  await started;
  return { done };
}

describe('concurrent ingests of small files', () => {
  it('share pipeline passes, and each file gets the chunks and the version it gets alone', async () => {
    const texts = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`f${i}`, text(`file ${i}`, 2 + i)]),
    );
    const together = await Promise.all(Object.entries(texts).map(([id, t]) => ingest(id, t)));
    const passLines = ingestedLines();
    // One after another, each alone, into another collection.
    for (const [id, t] of Object.entries(texts)) await ingest(`alone-${id}`, t, { collection: 'alone' });
    for (const [k, id] of Object.keys(texts).entries()) {
      const mine = await pointsOf(f.h.index, id);
      const alone = await pointsOf(f.h.index, `alone-${id}`);
      expect(mine.length).toBeGreaterThan(0);
      expect(shape(mine)).toEqual(shape(alone));
      expect(versionsOf(mine)).toEqual([together[k]!.ingestVersion]);
      expect(together[k]!.chunksCount).toBe(mine.length);
    }
    expect(await f.h.index.count({ reserved: 'writing' })).toBe(0);
    // The first ran alone; the others, arriving while it ran, went in passes of several files.
    const batches = passLines.map((l) => l.batch as number | undefined);
    expect(batches.filter((b) => b === undefined).length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...batches.map((b) => b ?? 0))).toBeGreaterThan(1);
    // The sequential ones ran alone, each in its own pipeline.
    expect(
      ingestedLines()
        .slice(passLines.length)
        .every((l) => l.batch === undefined),
    ).toBe(true);
  });

  it('a file that fails in a shared pass fails alone, with the error it gets alone', async () => {
    // A text file with no text in it: the pass reads it with the others, and it fails there.
    const blank = '   \n \t \n';
    const alone = await ingest('blank-alone', blank).then(
      () => undefined,
      (err: { code?: string; statusCode?: number; message?: string }) => ({
        code: err.code,
        status: err.statusCode,
        message: err.message,
      }),
    );
    expect(alone).toMatchObject({ code: 'EXTRACTION_FAILED', status: 422 });
    const lead = await leading('lead');
    const results = await Promise.allSettled([
      ingest('g1', text('good one', 5)),
      ingest('g2', text('good two', 5)),
      ingest('blank', blank),
      ingest('g3', text('good three', 5)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const reason = (results[2] as PromiseRejectedResult).reason as {
      code?: string;
      statusCode?: number;
      message?: string;
    };
    expect({ code: reason.code, status: reason.statusCode, message: reason.message }).toEqual(alone);
    expect(await f.h.index.count({ fileId: 'blank' })).toBe(0);
    for (const id of ['g1', 'g2', 'g3']) expect((await pointsOf(f.h.index, id)).length).toBeGreaterThan(0);
    await lead.done;
    // The good ones went through shared passes.
    for (const id of ['g1', 'g2', 'g3']) {
      expect(ingestedLines().find((l) => l.fileId === id)?.batch).toBeGreaterThanOrEqual(1);
    }
  });

  it('a document with a reader of its own (a PDF) runs its own pipeline, beside the shared passes', async () => {
    const lead = await leading('lead');
    const pdf = makePdf([[{ text: 'The heron report covers the marsh survey of the year.' }]]);
    const [report, note] = await Promise.all([
      ingest('report', pdf, { ext: 'pdf' }),
      ingest('note', text('note', 5)),
    ]);
    await lead.done;
    expect(report.chunksCount).toBeGreaterThan(0);
    expect(note.chunksCount).toBeGreaterThan(0);
    // The text file joined a pass; the PDF, which could hold a pass up for seconds, did not.
    expect(ingestedLines().find((l) => l.fileId === 'note')?.batch).toBeGreaterThanOrEqual(1);
    expect(ingestedLines().find((l) => l.fileId === 'report')).not.toHaveProperty('batch');
  });

  it('a caller that goes away mid-pass fails with 499 and keeps its previous version; the others commit', async () => {
    const first = await ingest('kept', text('first kept', 4));
    const controller = new AbortController();
    const stages: string[] = [];
    const lead = await leading('lead');
    const results = await Promise.allSettled([
      ingest('o1', text('other one', 6)),
      ingest('o2', text('other two', 6)),
      ingest('kept', text('second kept', 9), {
        signal: controller.signal,
        onProgress: (p) => {
          stages.push(p.stage);
          // The pass has started with this file in it: its caller leaves now.
          if (p.stage === 'convert') controller.abort();
        },
      }),
      ingest('o3', text('other three', 6)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(((results[2] as PromiseRejectedResult).reason as { statusCode?: number }).statusCode).toBe(499);
    expect(stages[0]).toBe('convert');
    expect(versionsOf(await pointsOf(f.h.index, 'kept'))).toEqual([first.ingestVersion]);
    await lead.done;
    for (const id of ['o1', 'o2', 'o3']) {
      expect(ingestedLines().find((l) => l.fileId === id)?.batch).toBeGreaterThanOrEqual(1);
    }
    for (const id of ['o1', 'o2', 'o3']) expect((await pointsOf(f.h.index, id)).length).toBeGreaterThan(0);
    expect(await f.h.index.count({ reserved: 'writing' })).toBe(0);
  });

  it('reports each stage of a shared pass to the file’s caller (a job’s progress)', async () => {
    const progress: PipelineProgress[] = [];
    const lead = await leading('lead');
    const follower = ingest('follower', text('follower', 8), { onProgress: (p) => progress.push(p) });
    await Promise.all([lead.done, follower]);
    const line = ingestedLines().find((l) => l.fileId === 'follower');
    expect(line?.batch).toBeGreaterThanOrEqual(1);
    expect(progress.map((p) => p.stage)).toEqual(['convert', 'chunk', 'sparse', 'write']);
    const chunks = (await follower).chunksCount;
    expect(progress.at(-1)).toEqual({ stage: 'write', chunksTotal: chunks, chunksDone: chunks });
  });
});

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('concurrent ingests under Redis leases (REDIS_URL) share passes too'),
  () => {
    const redis = redisForSuite();
    const g = serviceFixture(() => ({ ...SMALL_CHUNKS_ENV, REDIS_URL: redis.url }));

    it('each file gets one fenced version, the ones re-ingested lose their old one, nothing is left over', async () => {
      const put = async (fileId: string, content: string, onProgress?: () => void) => {
        const path = join(g.dir, `${fileId}-${Math.random().toString(16).slice(2)}.txt`);
        await writeFile(path, content);
        return g.service.ingest(
          {
            fileId,
            filename: `${fileId}.txt`,
            collectionName: C,
            collectionType: 'file',
            userId: 'u1',
            overwrite: true,
            source: `${fileId}.txt`,
          },
          async () => ({ path, filename: `${fileId}.txt`, bytes: Buffer.byteLength(content) }),
          undefined,
          onProgress ? { onProgress } : {},
        );
      };
      const old = await Promise.all(['r1', 'r2'].map((id) => put(id, text(`old ${id}`, 4))));
      // A long one first, running when the others arrive.
      let running: () => void = () => {};
      const started = new Promise<void>((resolve) => {
        running = resolve;
      });
      const lead = put('lead', text('lead', 60), () => running());
      await started;
      const ids = ['r1', 'r2', 'n1', 'n2', 'n3', 'n4'];
      const out = await Promise.all(ids.map((id) => put(id, text(`new ${id}`, 5))));
      await lead;
      const lines = g.h.logs.lines.filter((l) => l.msg === 'ingested');
      for (const [k, id] of ids.entries()) {
        const versions = versionsOf(await pointsOf(g.h.index, id));
        expect(versions).toEqual([out[k]!.ingestVersion]);
        expect(
          lines.find((l) => l.fileId === id && l.version === out[k]!.ingestVersion)?.batch,
        ).toBeGreaterThanOrEqual(1);
      }
      // Fenced versions (the lease's fence in them) differ from the old ones, which are gone.
      expect(out[0]!.ingestVersion).not.toBe(old[0]!.ingestVersion);
      expect(await g.h.index.count({ reserved: 'writing' })).toBe(0);
      expect(await g.h.index.count({ reserved: 'staging' })).toBe(0);
    });
  },
);
