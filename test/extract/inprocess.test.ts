import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KildeError } from '../../src/errors.js';
import type { ExtractedDocument } from '../../src/extract/extractor.js';
import { createInprocessExtractor } from '../../src/extract/inprocess-engine.js';
import { DANISH_CORPUS, DOCUMENTS } from '../fixtures/index.js';

const DOCS = DOCUMENTS;
const DANISH = join(DANISH_CORPUS, '1.1.md');
const engine = createInprocessExtractor();

async function extract(name: string, dir = DOCS): Promise<ExtractedDocument> {
  const docs = await engine.extract({ path: join(dir, name), filename: name });
  expect(docs).toHaveLength(1);
  return docs[0] as ExtractedDocument;
}

async function failure(promise: Promise<unknown>): Promise<KildeError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KildeError);
  return err as KildeError;
}

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-extract-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('inprocess engine on real documents', () => {
  it('reads a PDF page by page, with page spans into the text and the info dictionary', async () => {
    const doc = await extract('multi_page.pdf');
    expect(doc.metadata).toMatchObject({ mime_type: 'application/pdf', page_count: 5, languages: ['en'] });
    expect(doc.metadata.created_at).toBe('2025-01-24T13:59:15.000Z');
    expect(doc.pages).toHaveLength(5);
    const first = doc.pages?.[0];
    expect(doc.text.slice(first?.start, first?.end)).toContain('The Evolution of the Word Processor');
    const last = doc.pages?.[4];
    expect(doc.text.slice(last?.start, last?.end)).toContain('heart of how we express ideas');
    for (const [i, p] of (doc.pages ?? []).entries()) {
      expect(p.page).toBe(i + 1);
      if (i > 0) expect(p.start).toBeGreaterThanOrEqual(doc.pages?.[i - 1]?.end ?? 0);
    }
  });

  it('takes title, author and creation date from the PDF info dictionary and detects Korean', async () => {
    const doc = await extract('normal_4pages.pdf');
    expect(doc.metadata.title).toBe('코로나-19 관련 보험약관상 재해보험금 지급문제 및 개선과제');
    expect(doc.metadata.authors).toEqual(['김창호']);
    expect(doc.metadata.created_at).toBe('2020-03-31T09:02:55.000Z');
    expect(doc.metadata.languages[0]).toBe('ko');
  });

  it('decodes CJK fonts that need the Adobe CMaps', async () => {
    const doc = await extract('skipped_1page.pdf');
    const page3 = doc.pages?.[2];
    expect(doc.text.slice(page3?.start, page3?.end)).toContain(
      'ICT 기술변화에 따른 미래 보안기술 전망 보고서',
    );
  });

  it('turns DOCX headings into Markdown headings and reads docProps/core.xml', async () => {
    const doc = await extract('unit_test_headers.docx');
    expect(doc.text).toMatch(/^# Test Document$/m);
    expect(doc.text).toMatch(/^# Section 1$/m);
    expect(doc.text).toMatch(/^## Section 1\.1$/m);
    expect(doc.text).toMatch(/^### Section 1\.2\.3$/m);
    expect(doc.metadata).toMatchObject({
      authors: ['Peter Staar'],
      created_at: '2024-09-26T08:01:00.000Z',
      mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
    expect(doc.pages).toBeUndefined();
  });

  it('renders DOCX tables as GFM tables and keeps list structure', async () => {
    const tables = await extract('word_tables.docx');
    expect(tables.text).toMatch(/^\| Header 0\.0 +\| Header 0\.1 +\| Header 0\.2 +\|$/m);
    expect(tables.text).toMatch(/^\| Cell 1\.0 +\| Merged Cell 1\.1 1\.2 +\|/m);
    const lists = await extract('docx_lists.docx');
    expect(lists.text).toMatch(/^- List item 1$/m);
    expect(lists.text).toMatch(/^ {2}- List item 1\.1$/m);
  });

  it('reads text inside DOCX text boxes', async () => {
    const doc = await extract('drawingml.docx');
    expect(doc.text).toContain('Text 1');
    expect(doc.text).toContain('Text 2');
  });

  it('reads PPTX slides as pages with their titles as headings and tables as Markdown', async () => {
    const doc = await extract('powerpoint_sample.pptx');
    expect(doc.metadata).toMatchObject({ page_count: 3, authors: ['Maxim Lysak'], languages: ['en'] });
    expect(doc.pages?.map((p) => p.page)).toEqual([1, 2, 3]);
    const slide1 = doc.text.slice(doc.pages?.[0]?.start, doc.pages?.[0]?.end);
    expect(slide1).toMatch(/^# Test Table Slide$/m);
    expect(slide1).toMatch(/^\| R1 \| True \| False \|/m);
    const slide2 = doc.text.slice(doc.pages?.[1]?.start, doc.pages?.[1]?.end);
    expect(slide2).toMatch(/^# Second slide title$/m);
    expect(doc.text).not.toMatch(/^---$/m);
  });

  it('renders every XLSX sheet as a Markdown table under its sheet name', async () => {
    const doc = await extract('xlsx_01.xlsx');
    expect(doc.metadata.sheet_names).toEqual(
      expect.arrayContaining(['Sheet1', 'Sheet2', 'Sheet3', 'Sheet4']),
    );
    for (const sheet of ['Sheet1', 'Sheet2', 'Sheet3', 'Sheet4'])
      expect(doc.text).toMatch(new RegExp(`^## ${sheet}$`, 'm'));
    expect(doc.text).toMatch(/^\| col-1 \| col-2 \| col-3 \| col-4 \|/m);
    expect(doc.metadata.created_at).toBe('2024-11-16T05:17:41.000Z');
  });

  it('converts HTML to Markdown with headings and tables, and reads <title>', async () => {
    const duck = await extract('wiki_duck.html');
    expect(duck.metadata).toMatchObject({
      title: 'Duck - Wikipedia',
      mime_type: 'text/html',
      languages: ['en'],
    });
    expect(duck.text).toMatch(/^# Duck$/m);
    expect(duck.text).not.toContain('<script');
    // Prose links keep their text only.
    expect(duck.text).toContain(
      '**Duck** is the common name for numerous species of waterfowl in the family Anatidae.',
    );
    const table = await extract('table_06.html');
    expect(table.text).toMatch(/^# Header$/m);
    expect(table.text).toMatch(/^\| A +\| B +\|$/m);
  });

  it('passes Markdown through and detects Danish', async () => {
    const doc = await extract('1.1.md', join(DANISH, '..'));
    expect(doc.text).toBe((await readFile(DANISH, 'utf8')).replace(/\r\n?/g, '\n').trim());
    expect(doc.metadata.languages).toEqual(['da']);
    expect(doc.metadata.mime_type).toBe('text/markdown');
  });

  it('turns CSV into one Markdown table (quoted fields kept whole)', async () => {
    await writeFile(join(tmp, 'people.csv'), 'name,city\n"Hansen, Ida",Aarhus\nOle,"Odense ""C"""\n');
    const doc = await extract('people.csv', tmp);
    expect(doc.text).toBe('| name | city |\n| --- | --- |\n| Hansen, Ida | Aarhus |\n| Ole | Odense "C" |');
    expect(doc.metadata.mime_type).toBe('text/csv');
  });

  it('decodes legacy Windows-1252 text', async () => {
    await writeFile(join(tmp, 'old.txt'), Buffer.from([0x52, 0xf8, 0x64, 0x20, 0x67, 0x72, 0xf8, 0x64]));
    expect((await extract('old.txt', tmp)).text).toBe('Rød grød');
  });
});

describe('inprocess engine failures', () => {
  it('names an unsupported type (sniffed from magic bytes, not the extension)', async () => {
    await writeFile(
      join(tmp, 'photo.pdf'),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]),
    );
    const err = await failure(engine.extract({ path: join(tmp, 'photo.pdf'), filename: 'photo.pdf' }));
    expect(err).toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 422,
      message: 'Unsupported file type: image/png',
    });
  });

  it('names legacy Office files by their extension', async () => {
    await writeFile(join(tmp, 'old.doc'), Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]));
    const err = await failure(engine.extract({ path: join(tmp, 'old.doc'), filename: 'old.doc' }));
    expect(err.message).toBe('Unsupported file type: application/msword');
  });

  it('reports a corrupt PDF as EXTRACTION_FAILED', async () => {
    await writeFile(join(tmp, 'broken.pdf'), '%PDF-1.7\nthis is not a pdf body at all\n');
    const err = await failure(engine.extract({ path: join(tmp, 'broken.pdf'), filename: 'broken.pdf' }));
    expect(err.code).toBe('EXTRACTION_FAILED');
    expect(err.message).toMatch(/^Could not extract PDF file: /);
  });

  it('says a binary file named .pdf is corrupt or mislabelled, not that PDF is unsupported', async () => {
    await writeFile(join(tmp, 'garbage.pdf'), Buffer.from([0x00, 0x13, 0x37, 0x00, 0xff, 0x00]));
    for (const mimeType of [undefined, 'application/pdf']) {
      const err = await failure(
        engine.extract({
          path: join(tmp, 'garbage.pdf'),
          filename: 'garbage.pdf',
          ...(mimeType ? { mimeType } : {}),
        }),
      );
      expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
      expect(err.message).toBe(
        'File content does not match its type: named or sent as application/pdf, but it is not one (corrupt or mislabelled)',
      );
    }
  });

  it('pdf-inprocess accepts PDF only', async () => {
    const pdfOnly = createInprocessExtractor({ name: 'pdf-inprocess', only: ['pdf'] });
    const ok = await pdfOnly.extract({ path: join(DOCS, 'right_to_left_01.pdf'), filename: 'x.pdf' });
    expect(ok[0]?.metadata.languages).toEqual(['ar']);
    const err = await failure(
      pdfOnly.extract({ path: join(DOCS, 'lorem_ipsum.docx'), filename: 'lorem_ipsum.docx' }),
    );
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
    expect(err.message).toContain('accepts PDF only');
  });
});
