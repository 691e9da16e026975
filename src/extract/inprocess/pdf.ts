import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getDocumentProxy, getMeta } from 'unpdf';
import { checkTextSize, type ExtractionLimits, limitExceeded } from '../limits.js';
import { pdfInfo } from '../pdf-info.js';
import { joinPages, type ReadContent, type ReadMetadata } from './content.js';
import { type OutlineEntry, type PdfLine, pageTextsWithHeadings } from './pdf-headings.js';

/**
 * pdf.js needs the Adobe CMaps to decode CJK fonts with predefined encodings; without them those
 * pages come out empty or garbled. They ship with pdfjs-dist, read from disk (never fetched).
 */
const pdfjsDir = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
const PDF_OPTIONS = {
  verbosity: 0,
  cMapUrl: `${join(pdfjsDir, 'cmaps')}/`,
  cMapPacked: true,
  standardFontDataUrl: `${join(pdfjsDir, 'standard_fonts')}/`,
  isEvalSupported: false,
};

type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

/**
 * What one worker read of a PDF: the lines of its run of pages (`from`, 1-based, onwards), and in
 * the first part the outline and the info dictionary. A large PDF is read in parts by two workers
 * at once (`pooled-engine.ts`) and the parts joined in page order by `joinPdfParts`; a PDF read
 * whole is one part, so both paths build the text with the same code.
 */
export interface PdfPart {
  pageCount: number;
  from: number;
  lines: PdfLine[][];
  outline?: OutlineEntry[];
  metadata?: ReadMetadata;
}

/**
 * The pages (1-based, inclusive; empty when `from > to`) that part `part` of `of` reads. A PDF of
 * fewer than `minPages` pages is read whole by part 0: splitting it costs more than it saves.
 */
export function partPages(pageCount: number, part: number, of: number, minPages: number): [number, number] {
  if (of <= 1 || pageCount < minPages) return part === 0 ? [1, pageCount] : [1, 0];
  return [Math.floor((pageCount * part) / of) + 1, Math.floor((pageCount * (part + 1)) / of)];
}

/**
 * PDF text page by page (page spans into the joined text), headings marked as Markdown (from the
 * outline, else font sizes; see pdf-headings.ts) so chunks get `meta.headers`, and the info
 * dictionary. The page count is judged before any page is read, and pages are read one at a time
 * (each released after its lines are taken) so memory follows the largest page, not the document.
 */
export async function readPdf(path: string, limits: ExtractionLimits): Promise<ReadContent> {
  return joinPdfParts([await readPdfPart(path, limits)]);
}

/** Part `part` of `of` of a PDF (see `partPages`); the whole document with the defaults. */
export async function readPdfPart(
  path: string,
  limits: ExtractionLimits,
  part = 0,
  of = 1,
  minPages = 0,
): Promise<PdfPart> {
  const data = new Uint8Array(await readFile(path));
  const pdf = await getDocumentProxy(data, PDF_OPTIONS);
  try {
    const pageCount = pdf.numPages;
    if (pageCount > limits.maxPages) {
      throw limitExceeded(
        `${pageCount.toLocaleString('en')} pages, more than ${limits.maxPages.toLocaleString('en')}`,
        'EXTRACTION_MAX_PAGES',
      );
    }
    const [from, to] = partPages(pageCount, part, of, minPages);
    const lines: PdfLine[][] = [];
    let chars = 0;
    for (let n = from; n <= to; n++) {
      const page = await pageLines(pdf, n);
      for (const l of page) chars += l.text.length + 1;
      checkTextSize(chars, limits);
      lines.push(page);
    }
    if (part !== 0) return { pageCount, from, lines };
    const outline = await readOutline(pdf).catch(() => []);
    const { info } = await getMeta(pdf);
    return { pageCount, from, lines, outline, metadata: pdfInfo(info) };
  } finally {
    await pdf.destroy();
  }
}

/** The parts of one PDF, in page order, as one document (the text limit is the caller's). */
export function joinPdfParts(parts: readonly PdfPart[]): ReadContent {
  const [first] = parts;
  if (!first) throw new Error('no part of the PDF was read');
  let next = 1;
  for (const p of parts) {
    if (p.pageCount !== first.pageCount || (p.lines.length > 0 && p.from !== next)) {
      throw new Error(`the parts of the PDF do not follow each other (page ${p.from}, expected ${next})`);
    }
    next += p.lines.length;
  }
  if (next - 1 !== first.pageCount) throw new Error(`the parts hold ${next - 1} pages of ${first.pageCount}`);
  const pages = parts.flatMap((p) => p.lines);
  const joined = joinPages(pageTextsWithHeadings(pages, first.outline ?? []));
  return {
    text: joined.text,
    pages: joined.pages,
    metadata: { ...first.metadata, page_count: first.pageCount },
  };
}

/** A page's text runs joined as pdf.js orders them (a run with `hasEOL` ends a line), with font sizes. */
async function pageLines(pdf: PdfDocument, pageNumber: number): Promise<PdfLine[]> {
  const page = await pdf.getPage(pageNumber);
  const content = await page.getTextContent();
  const lines: PdfLine[] = [];
  let text = '';
  let size = 0;
  for (const item of content.items) {
    if (!('str' in item) || item.str == null) continue;
    const parts = item.str.split('\n');
    const [, , c = 0, d = 0] = item.transform as number[];
    const runSize = Math.hypot(c, d);
    parts.forEach((part, i) => {
      if (i > 0) {
        lines.push({ text, size });
        text = '';
        size = 0;
      }
      text += part;
      if (part.trim() !== '') size = Math.max(size, runSize);
    });
    if (item.hasEOL) {
      lines.push({ text, size });
      text = '';
      size = 0;
    }
  }
  lines.push({ text, size });
  page.cleanup();
  return lines;
}

/** The outline (bookmarks) flattened in reading order, each entry with its depth and 0-based page. */
async function readOutline(pdf: PdfDocument): Promise<OutlineEntry[]> {
  const tree = await pdf.getOutline();
  if (!tree || tree.length === 0) return [];
  const out: OutlineEntry[] = [];
  const walk = async (nodes: typeof tree, level: number): Promise<void> => {
    for (const node of nodes) {
      const page = await destinationPage(pdf, node.dest);
      if (page !== undefined && node.title.trim() !== '') out.push({ title: node.title, level, page });
      if (node.items.length > 0) await walk(node.items, level + 1);
    }
  };
  await walk(tree, 1);
  return out;
}

async function destinationPage(pdf: PdfDocument, dest: unknown): Promise<number | undefined> {
  const explicit = typeof dest === 'string' ? await pdf.getDestination(dest) : dest;
  if (!Array.isArray(explicit) || explicit.length === 0) return undefined;
  const target: unknown = explicit[0];
  if (typeof target === 'number') return target;
  if (typeof target === 'object' && target !== null) {
    return pdf.getPageIndex(target as Parameters<PdfDocument['getPageIndex']>[0]);
  }
  return undefined;
}
