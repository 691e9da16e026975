import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { extractText, getDocumentProxy, getMeta } from 'unpdf';
import { toIsoDate } from '../dates.js';
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

/** PDF text page by page (page spans into the joined text) and the info dictionary. */
export async function readPdf(path: string): Promise<ReadContent> {
  const data = new Uint8Array(await readFile(path));
  const pdf = await getDocumentProxy(data, PDF_OPTIONS);
  try {
    const { totalPages, text } = await extractText(pdf, { mergePages: false });
    const { info } = await getMeta(pdf);
    const joined = joinPages(text);
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
