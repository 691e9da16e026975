import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractionSchema } from '../../src/config/extraction.js';
import { parseConfig } from '../../src/config/parse.js';
import { ownPool } from '../../src/extract/create-extractor.js';
import { type PdfReader, readPdf } from '../../src/extract/inprocess/pdf-parts.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { createPooledExtractor } from '../../src/extract/pooled-engine.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { DOCUMENTS } from '../fixtures/index.js';
import { makePdf } from '../helpers/make-pdf.js';
import { writePdf } from '../reliability/hostile-documents.js';

/*
 * The two PDF text readers (`EXTRACTION_PDF_READER`): PDFium (the default) and pdf.js give the same
 * pages, page spans, headings and metadata, and the same characters up to spacing; PDFium leaves to
 * pdf.js what it cannot open, and its memory (outside V8's heap) is held to the heap limit.
 */

const FIXTURES = [
  'code_and_formula.pdf',
  'multi_page.pdf',
  'normal_4pages.pdf',
  'right_to_left_01.pdf',
  'skipped_1page.pdf',
];
const READERS: PdfReader[] = ['pdfium', 'pdfjs'];
/** Heading lines; a character a font maps to nothing is U+FFFD in one reader, a lone surrogate or private use in the other. */
const headings = (text: string) =>
  (text.match(/^#+ .*/gm) ?? []).map((h) => h.replace(/[\uFFFD\p{Co}\p{Cs}]/gu, ''));
const visible = (text: string) => text.replace(/\s+/g, '');

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-pdf-readers-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('PDFium and pdf.js', () => {
  it.each(FIXTURES)('%s: the same pages, metadata and characters (up to spacing)', async (name) => {
    const [pdfium, pdfjs] = await Promise.all(
      READERS.map((r) => readPdf(join(DOCUMENTS, name), DEFAULT_LIMITS, r)),
    );
    expect(pdfium!.pages?.map((p) => p.page)).toEqual(pdfjs!.pages?.map((p) => p.page));
    expect(pdfium!.metadata).toEqual(pdfjs!.metadata);
    const [a, b] = [visible(pdfium!.text), visible(pdfjs!.text)];
    expect(Math.abs(a.length - b.length)).toBeLessThanOrEqual(Math.ceil(b.length * 0.005));
    // Each page span holds that page's text.
    for (const p of pdfium!.pages ?? []) expect(p.end).toBeGreaterThanOrEqual(p.start);
  });

  it('marks the same headings from font sizes on the fixtures', async () => {
    for (const name of ['code_and_formula.pdf', 'multi_page.pdf', 'skipped_1page.pdf']) {
      const [pdfium, pdfjs] = await Promise.all(
        READERS.map((r) => readPdf(join(DOCUMENTS, name), DEFAULT_LIMITS, r)),
      );
      expect(headings(pdfium!.text), name).toEqual(headings(pdfjs!.text));
    }
  });

  it.each(READERS)('%s: headings from the outline and from font sizes of a generated PDF', async (reader) => {
    const pages = Array.from({ length: 12 }, (_, p) => [
      ...(p % 4 === 0 ? [{ text: `Part ${p / 4 + 1}`, size: 18 }] : []),
      ...Array.from({ length: 4 }, (_, l) => ({
        text: `Page ${p + 1} line ${l + 1} of ordinary body text.`,
      })),
    ]);
    await writeFile(join(tmp, `sizes-${reader}.pdf`), makePdf(pages));
    await writeFile(
      join(tmp, `outline-${reader}.pdf`),
      makePdf(pages, [
        { title: 'Part 1', page: 0 },
        { title: 'Part 2', page: 4 },
      ]),
    );
    const sized = await readPdf(join(tmp, `sizes-${reader}.pdf`), DEFAULT_LIMITS, reader);
    expect(headings(sized.text)).toEqual(['# Part 1', '# Part 2', '# Part 3']);
    const outlined = await readPdf(join(tmp, `outline-${reader}.pdf`), DEFAULT_LIMITS, reader);
    expect(headings(outlined.text)).toEqual(['# Part 1', '# Part 2']);
    expect(outlined.pages).toHaveLength(12);
    const fifth = outlined.pages?.[4];
    expect(outlined.text.slice(fifth?.start, fifth?.end)).toMatch(/^# Part 2\nPage 5 line 1/);
  });

  it('PDFium keeps the spaces between Arabic and Latin runs that pdf.js drops', async () => {
    const path = join(DOCUMENTS, 'right_to_left_01.pdf');
    expect((await readPdf(path, DEFAULT_LIMITS, 'pdfium')).text).toContain('بلغة R وPython');
    expect((await readPdf(path, DEFAULT_LIMITS, 'pdfjs')).text).toContain('بلغةRوPython');
  });

  it('a PDF whose page tree is nested past PDFium’s limit is read by pdf.js', async () => {
    const path = join(tmp, 'nested.pdf');
    await writePdf(path, 3, { nest: 5_000 });
    const read = await readPdf(path, DEFAULT_LIMITS, 'pdfium');
    expect(read.pages).toHaveLength(3);
    expect(read.text).toContain('Page 3 of a long hostile report.');
  });

  it('a page that needs more memory than EXTRACTION_MAX_HEAP_MB fails naming it; the next PDF gets a fresh PDFium', async () => {
    // 200,000 text runs on one page: PDFium holds each as an object (≈ 280 MiB of linear memory).
    const path = join(tmp, 'heavy.pdf');
    await writeFile(path, makePdf([Array.from({ length: 200_000 }, (_, i) => ({ text: `word ${i}` }))]));
    await expect(readPdf(path, { ...DEFAULT_LIMITS, maxHeapMb: 64 }, 'pdfium')).rejects.toMatchObject({
      code: 'EXTRACTION_FAILED',
      message:
        'Document exceeds an extraction limit: processing needed more than 64 MiB of memory (EXTRACTION_MAX_HEAP_MB)',
    });
    const after = await readPdf(join(DOCUMENTS, 'multi_page.pdf'), DEFAULT_LIMITS, 'pdfium');
    expect(headings(after.text)).toContain('# Pre-Digital Era (19th - Early 20th Century)');
  });

  it('a PDF over EXTRACTION_MAX_PAGES fails before any page is read', async () => {
    const path = join(tmp, 'pages.pdf');
    await writePdf(path, 12);
    await expect(readPdf(path, { ...DEFAULT_LIMITS, maxPages: 10 }, 'pdfium')).rejects.toMatchObject({
      code: 'EXTRACTION_FAILED',
      message: 'Document exceeds an extraction limit: 12 pages, more than 10 (EXTRACTION_MAX_PAGES)',
    });
  });
});

describe('EXTRACTION_PDF_READER in the worker pool', () => {
  const rtl = { path: join(DOCUMENTS, 'right_to_left_01.pdf'), filename: 'right_to_left_01.pdf' };
  const readWith = async (env: Record<string, string>) => {
    const settings = parseConfig(extractionSchema, { API_KEY: 'k', ...env });
    const pool = ownPool(settings, { log: pino({ level: 'silent' }) });
    try {
      const [doc] = await createPooledExtractor(pool, { name: 'inprocess' }).extract(rtl);
      return doc!.text;
    } finally {
      await pool.close();
    }
  };

  it('reads with PDFium by default and with pdf.js when set to pdfjs', async () => {
    expect(await readWith({})).toContain('بلغة R وPython');
    expect(await readWith({ EXTRACTION_PDF_READER: 'pdfjs' })).toContain('بلغةRوPython');
  });

  it('holds PDFium’s memory to EXTRACTION_MAX_HEAP_MB: EXTRACTION_FAILED, and the worker goes on', async () => {
    // 16 MiB: less than PDFium's linear memory at its start, so the first page is over it.
    const pool = new WorkerPool<IngestTasks>(
      {
        ...INGEST_POOL,
        size: 1,
        heapMb: 256,
        timeoutMs: 60_000,
        setup: { limits: { ...DEFAULT_LIMITS, maxHeapMb: 16 }, pdfReader: 'pdfium' },
      },
      { log: pino({ level: 'silent' }) },
    );
    try {
      const extractor = createPooledExtractor(pool, { name: 'inprocess' });
      await expect(extractor.extract(rtl)).rejects.toMatchObject({
        code: 'EXTRACTION_FAILED',
        message:
          'Document exceeds an extraction limit: processing needed more than 16 MiB of memory (EXTRACTION_MAX_HEAP_MB)',
      });
      const [worker] = pool.pids;
      const text = join(tmp, 'after.txt');
      await writeFile(text, 'Read by the same worker.');
      const [doc] = await extractor.extract({ path: text, filename: 'after.txt' });
      expect(doc?.text).toBe('Read by the same worker.');
      expect(pool.pids).toEqual([worker]);
    } finally {
      await pool.close();
    }
  });
});
