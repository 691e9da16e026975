import { toIsoDate } from './dates.js';
import type { ReadContent } from './inprocess/content.js';
import { splitAuthors } from './ooxml-core.js';

/** The fields Kilde keeps from a PDF's info dictionary (title, subject, authors, creation date). */
export function pdfInfo(info: Record<string, unknown>): ReadContent['metadata'] {
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
