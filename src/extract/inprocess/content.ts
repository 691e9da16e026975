import type { PageSpan } from '../extractor.js';

/** What a format reader returns; the engine adds languages and the MIME type. */
export interface ReadContent {
  text: string;
  pages?: PageSpan[];
  metadata: ReadMetadata;
}

/** The document metadata a reader can know (languages and MIME type are the engine's). */
export type ReadMetadata = {
  title?: string;
  subject?: string;
  authors?: string[];
  created_at?: string;
  page_count?: number;
  [extra: string]: unknown;
};

/** Joins page (or slide) texts with blank lines and records where each one sits in the result. */
export function joinPages(texts: readonly string[]): { text: string; pages: PageSpan[] } {
  let text = '';
  const pages: PageSpan[] = [];
  texts.forEach((raw, i) => {
    const t = raw.trim();
    if (t.length > 0 && text.length > 0) text += '\n\n';
    const start = text.length;
    text += t;
    pages.push({ page: i + 1, start, end: text.length });
  });
  return { text, pages };
}

/** Collapses the blank-line runs converters leave behind; Markdown needs at most one. */
export function tidyMarkdown(md: string): string {
  return md
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
