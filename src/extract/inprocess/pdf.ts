import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getDocumentProxy, getMeta } from 'unpdf';
import { toIsoDate } from '../dates.js';
import { checkTextSize, type ExtractionLimits, limitExceeded } from '../limits.js';
import { splitAuthors } from '../ooxml-core.js';
import { joinPages, type ReadContent } from './content.js';

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

/**
 * PDF text page by page (page spans into the joined text) and the info dictionary. The page count
 * is judged before any page is read, and pages are read one at a time (each released after its
 * text is taken) so memory follows the largest page, not the document.
 */
export async function readPdf(path: string, limits: ExtractionLimits): Promise<ReadContent> {
  const data = new Uint8Array(await readFile(path));
  const pdf = await getDocumentProxy(data, PDF_OPTIONS);
  try {
    const totalPages = pdf.numPages;
    if (totalPages > limits.maxPages) {
      throw limitExceeded(
        `${totalPages.toLocaleString('en')} pages, more than ${limits.maxPages.toLocaleString('en')}`,
        'EXTRACTION_MAX_PAGES',
      );
    }
    const texts: string[] = [];
    let chars = 0;
    for (let n = 1; n <= totalPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      // As unpdf's extractText joins a page's items.
      const text = content.items
        .map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : ''))
        .join('');
      page.cleanup();
      chars += text.length;
      checkTextSize(chars, limits);
      texts.push(text);
    }
    const { info } = await getMeta(pdf);
    const joined = joinPages(texts);
    return { text: joined.text, pages: joined.pages, metadata: { ...pdfInfo(info), page_count: totalPages } };
  } finally {
    await pdf.destroy();
  }
}

function pdfInfo(info: Record<string, unknown>): ReadContent['metadata'] {
  const str = (k: string) => {
    const v = info[k];
    return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
  };
  const out: ReadContent['metadata'] = {};
  const title = str('Title');
  const subject = str('Subject');
  const author = str('Author');
  const created = toIsoDate(str('CreationDate'));
  if (title) out.title = title;
  if (subject) out.subject = subject;
  if (author) out.authors = splitAuthors(author);
  if (created) out.created_at = created;
  return out;
}
