import { checkTextSize, type ExtractionLimits, limitExceeded } from '../limits.js';
import { joinPages, type ReadContent, type ReadMetadata } from './content.js';
import { type OutlineEntry, type PdfLine, pageTextsWithHeadings } from './pdf-headings.js';

/*
 * A PDF as the in-process engines read it, whichever library reads it (`EXTRACTION_PDF_READER`):
 * each reader gives the same `PdfPart` (pdf.ts: pdf.js; pdfium.ts: PDFium), and the parts become
 * one document here, with the same headings and page spans. Each reader's library loads only when
 * it is chosen.
 */

/** The library PDF text is read with (`EXTRACTION_PDF_READER`): pdf.js (pdf.ts) or PDFium (pdfium.ts). */
export type PdfReader = 'pdfjs' | 'pdfium';

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

/** Which part of a PDF a reader reads: part `part` of `of`, the PDF read whole below `minPages` pages. */
export interface PdfSplit {
  part: number;
  of: number;
  minPages: number;
}

/** The whole document, as one part. */
export const WHOLE: PdfSplit = { part: 0, of: 1, minPages: 0 };

/**
 * The pages (1-based, inclusive; empty when `from > to`) that part `part` of `of` reads. A PDF of
 * fewer than `minPages` pages is read whole by part 0: splitting it costs more than it saves.
 */
export function partPages(pageCount: number, part: number, of: number, minPages: number): [number, number] {
  if (of <= 1 || pageCount < minPages) return part === 0 ? [1, pageCount] : [1, 0];
  return [Math.floor((pageCount * part) / of) + 1, Math.floor((pageCount * (part + 1)) / of)];
}

/** The limit judged before any page is read (`EXTRACTION_MAX_PAGES`), by either reader. */
export function checkPageCount(pageCount: number, limits: Pick<ExtractionLimits, 'maxPages'>): void {
  if (pageCount > limits.maxPages) {
    throw limitExceeded(
      `${pageCount.toLocaleString('en')} pages, more than ${limits.maxPages.toLocaleString('en')}`,
      'EXTRACTION_MAX_PAGES',
    );
  }
}

/** The characters read so far with `page` added, held to `EXTRACTION_MAX_TEXT_CHARS` as each page comes. */
export function withPage(
  chars: number,
  page: readonly PdfLine[],
  limits: Pick<ExtractionLimits, 'maxTextChars'>,
): number {
  let total = chars;
  for (const l of page) total += l.text.length + 1;
  checkTextSize(total, limits);
  return total;
}

/**
 * PDF text page by page (page spans into the joined text), headings marked as Markdown (from the
 * outline, else font sizes; see pdf-headings.ts) so chunks get `meta.headers`, and the info
 * dictionary. The page count is judged before any page is read, and pages are read one at a time,
 * so memory follows the largest page, not the document.
 */
export async function readPdf(
  path: string,
  limits: ExtractionLimits,
  reader?: PdfReader,
): Promise<ReadContent> {
  return joinPdfParts([await readPdfPart(path, limits, WHOLE, reader)]);
}

/**
 * Part `part` of `of` of a PDF (see `partPages`), read by `reader` (PDFium unless told otherwise);
 * the whole document with the defaults. The page count is judged before any page is read. A part
 * PDFium cannot open is read by pdf.js.
 */
export async function readPdfPart(
  path: string,
  limits: ExtractionLimits,
  split: PdfSplit = WHOLE,
  reader: PdfReader = 'pdfium',
): Promise<PdfPart> {
  if (reader === 'pdfium') {
    const { readPdfiumPart, PdfiumCannotRead } = await import('./pdfium.js');
    try {
      return await readPdfiumPart(path, limits, split);
    } catch (err) {
      // What PDFium cannot open (a damaged file, a page tree nested past its limit), pdf.js may.
      if (!(err instanceof PdfiumCannotRead)) throw err;
    }
  }
  return (await import('./pdf.js')).readPdfjsPart(path, limits, split);
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
