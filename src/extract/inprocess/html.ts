import { readFile } from 'node:fs/promises';
import { toIsoDate } from '../dates.js';
import type { ExtractionLimits } from '../limits.js';
import { decodeXml, splitAuthors } from '../ooxml-core.js';
import type { ReadContent } from './content.js';
import { htmlToTidyMarkdown } from './html-markdown.js';
import { mainContentHtml } from './main-content.js';
import { decodeText } from './text.js';

/**
 * HTML → Markdown: headings stay `#` headings, tables become GFM tables (pipes escaped), links keep
 * their text and images are dropped (URLs and icons cost tokens and say little).
 */
export function htmlToMarkdown(html: string, limits: Pick<ExtractionLimits, 'maxNesting'>): string {
  return htmlToTidyMarkdown(html, limits);
}

export async function readHtml(path: string, limits: ExtractionLimits): Promise<ReadContent> {
  const html = decodeText(await readFile(path));
  // The whole page first: that conversion enforces the nesting limit before any DOM is built.
  const whole = htmlToMarkdown(html, limits);
  // Web-page chrome (navigation, language lists) is not content: only the article is kept.
  const article = mainContentHtml(html);
  const text = article === html ? whole : htmlToMarkdown(article, limits);
  return { text, metadata: htmlMetadata(html) };
}

/** Head metadata: `<title>`, author and publication date meta tags, and the declared `lang`. */
export function htmlMetadata(html: string): ReadContent['metadata'] {
  const head = html.slice(0, 200_000);
  const out: ReadContent['metadata'] = {};
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(head)?.[1];
  if (title && clean(title)) out.title = clean(title);
  const author = meta(head, ['author', 'dc.creator', 'dcterms.creator']);
  if (author) out.authors = splitAuthors(author);
  const subject = meta(head, ['dc.subject', 'dcterms.subject']);
  if (subject) out.subject = subject;
  const created = toIsoDate(meta(head, ['article:published_time', 'dcterms.created', 'dc.date', 'date']));
  if (created) out.created_at = created;
  const lang = /<html[^>]*\blang=["']?([a-zA-Z-]+)/i.exec(head)?.[1];
  if (lang) out.declared_language = lang;
  return out;
}

function meta(head: string, names: string[]): string | undefined {
  for (const tag of head.match(/<meta\b[^>]*>/gi) ?? []) {
    const key = /\b(?:name|property)=["']([^"']+)["']/i.exec(tag)?.[1]?.toLowerCase();
    const content = /\bcontent=["']([^"']*)["']/i.exec(tag)?.[1];
    if (key && content && names.includes(key) && clean(content)) return clean(content);
  }
  return undefined;
}

function clean(s: string): string {
  return decodeXml(s.replace(/&nbsp;/g, ' '))
    .replace(/\s+/g, ' ')
    .trim();
}
