import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenCounter } from '../../src/chunk/chunker.js';
import { loadTokenCounter } from '../../src/chunk/tokenizer.js';
import type { StoredPoint } from '../../src/index/contract.js';
import { DANISH_CHAPTERS } from '../fixtures/index.js';
import { AUTH } from '../helpers/app.js';
import {
  DANISH,
  FIXTURES,
  type Harness,
  multipartBody,
  pointsOf,
  startIngest,
  TOKENIZER,
} from './helpers/harness.js';

const CHUNK_SIZE = 200;
let h: Harness;
let counter: TokenCounter;

beforeAll(async () => {
  h = await startIngest({
    CHUNK_SPLIT_BY: 'markdown',
    CHUNK_SIZE: String(CHUNK_SIZE),
    CHUNK_OVERLAP: '20',
    TOKENIZER_MODEL: TOKENIZER,
    SPARSE_LANGUAGE: 'danish',
  });
  counter = await loadTokenCounter(TOKENIZER);
});
afterAll(async () => {
  await counter?.close?.();
  await h?.close();
});

async function ingestFile(path: string, fileId: string, collection = 'docs'): Promise<StoredPoint[]> {
  const name = path.split('/').at(-1)!;
  const { body, headers } = multipartBody(
    { file_id: fileId, collection_name: collection, user_id: 'u1' },
    { name, content: await readFile(path) },
  );
  const res = await h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, `${name}: ${res.body}`).toBe(200);
  const points = await pointsOf(h.index, fileId);
  expect(points).toHaveLength(res.json().chunks_count);
  return points;
}

/** What every chunk of every document must satisfy. */
function expectSaneChunks(points: StoredPoint[], name: string) {
  expect(points.length).toBeGreaterThan(0);
  points.forEach((p, i) => {
    expect(p.meta.split_id).toBe(i);
    expect(p.meta.name).toBe(name);
    expect(p.content.trim().length).toBeGreaterThan(0);
    expect(p.meta.char_start).toBeGreaterThanOrEqual(0);
    expect(p.meta.char_end).toBeGreaterThan(p.meta.char_start!);
    expect(p.meta.languages?.length).toBeGreaterThan(0);
    expect(p.meta.extraction_engine).toBe('inprocess');
    expect(counter.count(p.content)).toBeLessThanOrEqual(CHUNK_SIZE);
  });
}

const headerPaths = (points: StoredPoint[]) => points.map((p) => (p.meta.headers ?? []).join(' > '));

describe('real documents (docling test fixtures)', () => {
  it('PDF: chunks keep their page numbers in order, with the info-dictionary metadata', async () => {
    const points = await ingestFile(join(FIXTURES, 'normal_4pages.pdf'), 'pdf-4');
    expectSaneChunks(points, 'normal_4pages.pdf');
    const pages = points.map((p) => p.meta.page!);
    expect(pages[0]).toBe(0);
    expect(pages.at(-1)).toBe(3);
    expect(pages).toEqual([...pages].sort((a, b) => a - b));
    for (const p of points) {
      expect(p.meta.page_number).toBe(p.meta.page! + 1);
      expect(p.meta.pages).toContain(p.meta.page_number);
    }
    expect(points[0]!.meta).toMatchObject({ authors: ['김창호'], languages: ['ko'] });
    expect(points[0]!.meta.title).toMatch(/코로나-19/);
    expect(points[0]!.meta.created_at).toMatch(/^2020-03-31T/);
  });

  it('DOCX: headings become the breadcrumb; core properties become metadata', async () => {
    const points = await ingestFile(join(FIXTURES, 'unit_test_headers.docx'), 'docx-h');
    expectSaneChunks(points, 'unit_test_headers.docx');
    expect(headerPaths(points)).toContain('Section 1 > Section 1.1');
    expect(points[0]!.meta.authors).toEqual(['Peter Staar']);
    expect(points[0]!.meta.created_at).toMatch(/^2024-09-26T/);
  });

  it('DOCX tables are rendered as Markdown tables', async () => {
    const points = await ingestFile(join(FIXTURES, 'word_tables.docx'), 'docx-t');
    expectSaneChunks(points, 'word_tables.docx');
    expect(points.some((p) => /^\|.*\|\s*$/m.test(p.content) && /\|\s*-{3,}/.test(p.content))).toBe(true);
  });

  it('PPTX: slide titles head the chunks', async () => {
    const points = await ingestFile(join(FIXTURES, 'powerpoint_sample.pptx'), 'pptx');
    expectSaneChunks(points, 'powerpoint_sample.pptx');
    expect(headerPaths(points)).toEqual(expect.arrayContaining(['Test Table Slide', 'Second slide title']));
  });

  it('XLSX: each sheet is a section with a Markdown table', async () => {
    const points = await ingestFile(join(FIXTURES, 'xlsx_01.xlsx'), 'xlsx');
    expectSaneChunks(points, 'xlsx_01.xlsx');
    expect(new Set(headerPaths(points))).toEqual(new Set(['Sheet1', 'Sheet2', 'Sheet3', 'Sheet4']));
    expect(points.filter((p) => /^\|.*\|\s*$/m.test(p.content)).length).toBeGreaterThanOrEqual(3);
  });

  it('HTML: the page title and section headings are kept', async () => {
    const points = await ingestFile(join(FIXTURES, 'wiki_duck.html'), 'html');
    expectSaneChunks(points, 'wiki_duck.html');
    expect(points[0]!.meta.title).toBe('Duck - Wikipedia');
    expect(points.length).toBeGreaterThan(10);
    expect(points.some((p) => /mallard/i.test(p.content))).toBe(true);
  });

  it('ingests every fixture without a failure', async () => {
    const files = (await readdir(FIXTURES)).filter((f) => /\.(pdf|docx|pptx|xlsx|html)$/.test(f));
    expect(files.length).toBeGreaterThanOrEqual(15);
    for (const f of files) expectSaneChunks(await ingestFile(join(FIXTURES, f), `all-${f}`), f);
  });
});

describe('the Danish citizenship textbook', () => {
  it('ingests every chapter as Danish, with the section breadcrumb on each chunk', async () => {
    const chapters = (await readdir(DANISH)).filter((f) => f.endsWith('.md'));
    expect(chapters).toHaveLength(DANISH_CHAPTERS);
    let total = 0;
    for (const f of chapters) {
      const points = await ingestFile(join(DANISH, f), `da-${f}`, 'da');
      expectSaneChunks(points, f);
      for (const p of points) expect(p.meta.languages).toEqual(['da']);
      total += points.length;
    }
    expect(await h.index.count({ collectionNames: ['da'] })).toBe(total);

    const spanish = (await pointsOf(h.index, 'da-1.9.md')).filter(
      (p) => p.meta.headers?.at(-1) === '1.9.2 Den Spanske Syge',
    );
    expect(spanish.length).toBeGreaterThan(0);
    expect(spanish[0]!.meta.headers![0]).toBe('1.9 Verdenskrig, kriser og socialreformer (1914-40)');
    expect(spanish.some((p) => /spanske syge/i.test(p.content))).toBe(true);
  });
});
