import type { PageSpan } from '../extract/extractor.js';
import type { Chunk } from './chunker.js';
import { isSpace, type Span, sentenceSpans } from './sentences.js';
import type { Boundaries } from './windows.js';

/** Everything the splitters share about one document. */
export interface DocText {
  text: string;
  pages: readonly PageSpan[] | undefined;
}

/**
 * Builds a chunk over `text[start, end)`, trimmed of surrounding whitespace; `undefined` when only
 * whitespace is left. `lead` (a section heading repeated on continuation chunks) is prepended to the
 * content but is not part of the offsets.
 */
export function makeChunk(
  doc: DocText,
  start: number,
  end: number,
  extra: { headers?: string[]; lead?: string } = {},
): Chunk | undefined {
  let s = start;
  let e = end;
  while (s < e && isSpace(doc.text.charCodeAt(s))) s++;
  while (e > s && isSpace(doc.text.charCodeAt(e - 1))) e--;
  if (e <= s) return undefined;
  const body = doc.text.slice(s, e);
  const chunk: Chunk = {
    content: extra.lead ? `${extra.lead}\n\n${body}` : body,
    char_start: s,
    char_end: e,
  };
  if (extra.headers && extra.headers.length > 0) chunk.headers = extra.headers;
  const pages = pagesOf(doc.pages, s, e);
  if (pages) chunk.pages = pages;
  return chunk;
}

/** 1-based page numbers whose span meets [start, end); the page holding `start` if none does. */
export function pagesOf(
  pages: readonly PageSpan[] | undefined,
  start: number,
  end: number,
): number[] | undefined {
  if (!pages || pages.length === 0) return undefined;
  const hit: number[] = [];
  let holder: number | undefined;
  for (const p of pages) {
    if (p.start < end && p.end > start && !hit.includes(p.page)) hit.push(p.page);
    if (p.start <= start) holder = p.page;
  }
  if (hit.length > 0) return hit.sort((a, b) => a - b);
  return holder === undefined ? undefined : [holder];
}

/** Sentence starts and ends and heading starts of the whole text (computed once per document). */
export function boundariesOf(text: string): Boundaries {
  const spans: Span[] = sentenceSpans(text);
  const headingStarts = new Set<number>();
  for (const m of text.matchAll(/^[ \t]{0,3}#{1,6}(?:[ \t]|$)/gm))
    headingStarts.add(m.index + m[0].indexOf('#'));
  return {
    sentenceStarts: new Set(spans.map((s) => s[0])),
    sentenceEnds: new Set(spans.map((s) => s[1])),
    headingStarts,
  };
}
