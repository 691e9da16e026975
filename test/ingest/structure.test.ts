import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredPoint } from '../../src/index/contract.js';
import { AUTH } from '../helpers/app.js';
import { makePdf } from '../helpers/make-pdf.js';
import { FIXTURES, type Harness, multipartBody, pointsOf, startIngest } from './helpers/harness.js';

/**
 * Chunks carry the heading breadcrumb of PDFs too (from the outline, else font sizes), and page
 * furniture stays out of them: table-of-contents dot leaders, web-page chrome.
 */
let h: Harness;
beforeAll(async () => {
  h = await startIngest({ CHUNK_SPLIT_BY: 'markdown', CHUNK_SIZE: '200', CHUNK_OVERLAP: '0' });
});
afterAll(() => h?.close());

async function ingest(fileId: string, name: string, content: Buffer): Promise<StoredPoint[]> {
  const { body, headers } = multipartBody(
    { file_id: fileId, collection_name: 'docs', user_id: 'u1' },
    { name, content },
  );
  const res = await h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
  return pointsOf(h.index, fileId);
}

const paragraph = (topic: string) =>
  Array.from({ length: 4 }, (_, i) => ({
    text: `The ${topic} notes, line ${i + 1}, describe what the operator must check.`,
  }));
const crumbs = (points: StoredPoint[]) => points.map((p) => (p.meta.headers ?? []).join(' > '));

describe('PDF headings', () => {
  it('takes the breadcrumb from the outline when the PDF has one (same font size everywhere)', async () => {
    const pdf = makePdf(
      [
        [
          { text: '1 Installation' },
          ...paragraph('installation'),
          { text: '1.1 Requirements' },
          ...paragraph('requirements'),
        ],
        [{ text: '2 Operation' }, ...paragraph('operation')],
      ],
      [
        { title: '1 Installation', page: 0, children: [{ title: '1.1 Requirements', page: 0 }] },
        { title: '2 Operation', page: 1 },
      ],
    );
    const points = await ingest('outline', 'manual.pdf', pdf);
    expect(crumbs(points)).toEqual(
      expect.arrayContaining(['1 Installation > 1.1 Requirements', '2 Operation']),
    );
    const ops = points.find((p) => p.meta.headers?.[0] === '2 Operation');
    expect(ops?.meta).toMatchObject({ page: 1, page_number: 2 });
    expect(ops?.content).toContain('The operation notes');
  });

  it('without an outline, lines set larger than the body text become the breadcrumb', async () => {
    const pdf = makePdf([
      [{ text: 'Pump Handbook', size: 20 }, { text: 'Maintenance', size: 15 }, ...paragraph('maintenance')],
      [{ text: 'Faults', size: 15 }, ...paragraph('fault')],
    ]);
    const points = await ingest('sizes', 'handbook.pdf', pdf);
    expect(crumbs(points)).toEqual(
      expect.arrayContaining(['Pump Handbook > Maintenance', 'Pump Handbook > Faults']),
    );
  });

  it('finds the section headings of a real PDF (docling fixture, headings 13.4 pt over 12 pt body)', async () => {
    const points = await ingest('real', 'multi_page.pdf', await readFile(join(FIXTURES, 'multi_page.pdf')));
    expect(crumbs(points)).toContain('Pre-Digital Era (19th - Early 20th Century)');
    expect(crumbs(points)).toContain('The Rise of Personal Computers (1980s)');
  });
});

describe('page furniture', () => {
  it('drops table-of-contents lines with dot leaders; pages stay right', async () => {
    const pdf = makePdf([
      [
        { text: 'Contents', size: 15 },
        { text: '1 Installation ........................ 2' },
        { text: '1.1 Requirements . . . . . . . . . . . . 2' },
        { text: '2 Operation ___________________________ iii' },
      ],
      [{ text: 'Installation', size: 15 }, ...paragraph('installation')],
    ]);
    const points = await ingest('toc', 'guide.pdf', pdf);
    for (const p of points) expect(p.content).not.toMatch(/\.{4}|(\. ){4}|_{4}/);
    const body = points.find((p) => p.content.includes('installation notes'));
    expect(body?.meta).toMatchObject({ page: 1, page_number: 2 });
  });

  it('joins words hyphenated over a line break in text files and keeps real hyphens', async () => {
    const text = [
      'Besættelsen',
      '',
      'Tysklands besæt-',
      'telse af Danmark varede fem år, og Nord-',
      'Korea deltog ikke i 1800-',
      'tallets krige. En e-mail kom frem; en ny e-',
      'mail kom ikke frem.',
    ].join('\n');
    const points = await ingest('hyphens', 'besaettelse.txt', Buffer.from(text));
    const all = points.map((p) => p.content).join('\n');
    expect(all).toContain('Tysklands besættelse af Danmark');
    expect(all).toContain('Nord-Korea deltog ikke i 1800-tallets krige.');
    expect(all).toContain('en ny e-mail kom ikke frem.');
  });

  it('keeps only the article of a web page: no "Jump to content", language list or navigation', async () => {
    const points = await ingest('duck', 'wiki_duck.html', await readFile(join(FIXTURES, 'wiki_duck.html')));
    const all = points.map((p) => p.content).join('\n');
    for (const chrome of ['Jump to content', 'Afrikaans', 'Main page', 'Privacy policy', '136 languages']) {
      expect(all).not.toContain(chrome);
    }
    expect(all).toContain('Duck** is the common name for numerous species of waterfowl');
    expect(crumbs(points)).toContain('Duck > Etymology');
  });
});
