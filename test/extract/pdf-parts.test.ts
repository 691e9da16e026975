import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExtractedDocument } from '../../src/extract/extractor.js';
import { joinPdfParts, partPages, readPdf, readPdfPart } from '../../src/extract/inprocess/pdf-parts.js';
import { createInprocessExtractor } from '../../src/extract/inprocess-engine.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { createPooledExtractor } from '../../src/extract/pooled-engine.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { DOCUMENTS } from '../fixtures/index.js';
import { makePdf } from '../helpers/make-pdf.js';

const FIXTURE_PDFS = [
  'code_and_formula.pdf',
  'multi_page.pdf',
  'normal_4pages.pdf',
  'right_to_left_01.pdf',
  'skipped_1page.pdf',
].map((name) => ({ path: join(DOCUMENTS, name), filename: name }));

let tmp: string;
let generated: { path: string; filename: string }[];
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-pdf-parts-'));
  // 70 pages: a heading set larger than the body on every tenth page (font-size headings, whose
  // body size is judged over the whole document), and the same pages with an outline.
  const pages = Array.from({ length: 70 }, (_, p) => [
    ...(p % 10 === 0 ? [{ text: `Part ${p / 10 + 1}`, size: 18 }] : []),
    ...Array.from({ length: 6 }, (_, l) => ({ text: `Page ${p + 1} line ${l + 1} of ordinary body text.` })),
  ]);
  const outline = Array.from({ length: 7 }, (_, k) => ({ title: `Part ${k + 1}`, page: k * 10 }));
  await writeFile(join(tmp, 'sizes.pdf'), makePdf(pages));
  await writeFile(join(tmp, 'outline.pdf'), makePdf(pages, outline));
  generated = ['sizes.pdf', 'outline.pdf'].map((name) => ({ path: join(tmp, name), filename: name }));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('a PDF read in parts', () => {
  it('splits the pages evenly and leaves a short document whole to the first part', () => {
    expect([0, 1].map((part) => partPages(300, part, 2, 64))).toEqual([
      [1, 150],
      [151, 300],
    ]);
    expect([0, 1].map((part) => partPages(7, part, 2, 0))).toEqual([
      [1, 3],
      [4, 7],
    ]);
    expect([0, 1].map((part) => partPages(63, part, 2, 64))).toEqual([
      [1, 63],
      [1, 0],
    ]);
    expect(partPages(1, 0, 2, 0)).toEqual([1, 0]);
    expect(partPages(1, 1, 2, 0)).toEqual([1, 1]);
  });

  it('gives the same text, page spans, headings and metadata as the PDF read whole', async () => {
    for (const file of [...FIXTURE_PDFS, ...generated]) {
      const whole = await readPdf(file.path, DEFAULT_LIMITS);
      const parts = await Promise.all(
        [0, 1].map((part) => readPdfPart(file.path, DEFAULT_LIMITS, { part, of: 2, minPages: 0 })),
      );
      expect(parts[1]?.lines.length, file.filename).toBeGreaterThan(0);
      expect(joinPdfParts(parts), file.filename).toEqual(whole);
    }
    const outlined = await readPdf(generated[1]!.path, DEFAULT_LIMITS);
    expect(outlined.text).toContain('# Part 7\nPage 61 line 1');
    const sized = await readPdf(generated[0]!.path, DEFAULT_LIMITS);
    expect(sized.text).toContain('# Part 4\nPage 31 line 1');
  });

  it('refuses parts that do not make the whole document', async () => {
    const file = generated[0]!.path;
    const [a, b] = await Promise.all(
      [0, 1].map((part) => readPdfPart(file, DEFAULT_LIMITS, { part, of: 2, minPages: 0 })),
    );
    expect(() => joinPdfParts([b!, a!])).toThrow(/do not follow each other/);
    expect(() => joinPdfParts([a!])).toThrow('the parts hold 35 pages of 70');
  });
});

describe('the pooled extractor with two free workers', () => {
  const log = pino({ level: 'silent' });
  const local = createInprocessExtractor();

  it('reads a large PDF in two parts on both workers, exactly as one worker reads it', async () => {
    const pool = new WorkerPool<IngestTasks>(
      { ...INGEST_POOL, size: 2, heapMb: 256, timeoutMs: 60_000, setup: { limits: DEFAULT_LIMITS } },
      { log },
    );
    try {
      const extractor = createPooledExtractor(pool, {
        name: 'inprocess',
        pdfSplit: { minBytes: 0, minPages: 0, spareCore: () => true },
      });
      for (const file of [...FIXTURE_PDFS, ...generated]) {
        expect(await extractor.extract(file), file.filename).toEqual(await local.extract(file));
      }
      // Both workers were started: the second read the other half of the pages.
      expect(pool.pids).toHaveLength(2);
      const many = await extractor.extractMany!(generated);
      const expected = await Promise.all(generated.map((f) => local.extract(f)));
      expect(many).toEqual(expected.map((value) => ({ status: 'fulfilled', value })));
    } finally {
      await pool.close();
    }
  });

  it('reads it in one task when the file is below the size, the cores are busy, or one worker is free', async () => {
    for (const pdfSplit of [
      { minBytes: 1e9, minPages: 0, spareCore: () => true },
      { minBytes: 0, minPages: 0, spareCore: () => false },
    ]) {
      const pool = new WorkerPool<IngestTasks>(
        { ...INGEST_POOL, size: 2, heapMb: 256, timeoutMs: 60_000, setup: { limits: DEFAULT_LIMITS } },
        { log },
      );
      try {
        const [doc] = await createPooledExtractor(pool, { name: 'inprocess', pdfSplit }).extract(
          FIXTURE_PDFS[1]!,
        );
        expect(pool.pids).toHaveLength(1);
        expect(doc).toEqual((await local.extract(FIXTURE_PDFS[1]!))[0] as ExtractedDocument);
      } finally {
        await pool.close();
      }
    }
    const one = new WorkerPool<IngestTasks>(
      { ...INGEST_POOL, size: 1, heapMb: 256, timeoutMs: 60_000, setup: { limits: DEFAULT_LIMITS } },
      { log },
    );
    try {
      const extractor = createPooledExtractor(one, {
        name: 'inprocess',
        pdfSplit: { minBytes: 0, minPages: 0, spareCore: () => true },
      });
      expect(await extractor.extract(generated[1]!)).toEqual(await local.extract(generated[1]!));
    } finally {
      await one.close();
    }
  });

  it('fails a split read as the whole read fails: a corrupt PDF, a PDF over the page limit', async () => {
    const limits = { ...DEFAULT_LIMITS, maxPages: 50 };
    const pool = new WorkerPool<IngestTasks>(
      { ...INGEST_POOL, size: 2, heapMb: 256, timeoutMs: 60_000, setup: { limits } },
      { log },
    );
    try {
      const extractor = createPooledExtractor(pool, {
        name: 'inprocess',
        pdfSplit: { minBytes: 0, minPages: 0, spareCore: () => true },
      });
      const whole = createInprocessExtractor({ name: 'inprocess', limits });
      await writeFile(join(tmp, 'broken.pdf'), '%PDF-1.7\nthis is not a pdf body at all\n');
      for (const file of [generated[0]!, { path: join(tmp, 'broken.pdf'), filename: 'broken.pdf' }]) {
        const [split, one] = await Promise.all(
          [extractor, whole].map((e) =>
            e.extract(file).then(
              () => undefined,
              (err: unknown) => err,
            ),
          ),
        );
        expect(split).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
        expect((split as Error).message).toBe((one as Error).message);
      }
    } finally {
      await pool.close();
    }
  });
});
