import { readFile } from 'node:fs/promises';
import { getDocumentProxy, getMeta } from 'unpdf';
import type { ExtractionLimits } from '../limits.js';
import { pdfInfo } from '../pdf-info.js';
import { PDF_OPTIONS } from '../pdfjs-options.js';
import type { OutlineEntry, PdfLine } from './pdf-headings.js';
import { checkPageCount, type PdfPart, type PdfSplit, partPages, WHOLE, withPage } from './pdf-parts.js';

type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

/**
 * Part `part` of `of` of a PDF with pdf.js (see `partPages` and `readPdfPart`, pdf-parts.ts): each
 * page's lines with font sizes (headings, pdf-headings.ts), and in the first part the outline and
 * the info dictionary. Pages are read one at a time (each released after its lines are taken), so
 * memory follows the largest page, not the document.
 */
export async function readPdfjsPart(
  path: string,
  limits: ExtractionLimits,
  split: PdfSplit = WHOLE,
): Promise<PdfPart> {
  const data = new Uint8Array(await readFile(path));
  const pdf = await getDocumentProxy(data, PDF_OPTIONS);
  try {
    const pageCount = pdf.numPages;
    checkPageCount(pageCount, limits);
    const [from, to] = partPages(pageCount, split.part, split.of, split.minPages);
    const lines: PdfLine[][] = [];
    let chars = 0;
    for (let n = from; n <= to; n++) {
      const page = await pageLines(pdf, n);
      chars = withPage(chars, page, limits);
      lines.push(page);
    }
    if (split.part !== 0) return { pageCount, from, lines };
    const outline = await readOutline(pdf).catch(() => []);
    const { info } = await getMeta(pdf);
    return { pageCount, from, lines, outline, metadata: pdfInfo(info) };
  } finally {
    await pdf.destroy();
  }
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
