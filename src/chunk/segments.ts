import type { PageSpan } from '../extract/extractor.js';
import { type Heading, headingsAfter } from './markdown-sections.js';

/** One piece of a document handed to the chunker on its own (offsets into the whole text). */
export interface Segment {
  start: number;
  end: number;
}

/** What the chunker receives for one segment: its text, its pages, the headings in effect. */
export interface ChunkInput {
  text: string;
  pages?: PageSpan[];
  /** Headings in effect where the segment starts (markdown breadcrumbs continue across segments). */
  outer?: Heading[];
}

/**
 * Cuts a long text into segments of at most `maxChars`, so that chunking (and the token offsets it
 * needs) holds one segment at a time instead of the whole document. A text no longer than
 * `maxChars` is one segment: short documents are chunked exactly as before. A cut goes, in order of
 * preference, before the last heading line, at the last blank line, at the last line break or at the
 * last space in the second half of the window; only a window without any of them is cut hard. No
 * chunk spans a cut, and overlap does not reach across it.
 */
export function segmentSpans(text: string, maxChars: number): Segment[] {
  if (!(maxChars > 0) || text.length <= maxChars) return [{ start: 0, end: text.length }];
  const out: Segment[] = [];
  let start = 0;
  while (text.length - start > maxChars) {
    const end = cutPoint(text, start, start + maxChars);
    out.push({ start, end });
    start = end;
  }
  if (start < text.length) out.push({ start, end: text.length });
  return out;
}

/** Where a segment starting at `start` ends, at most at `limit` (see `segmentSpans`). */
export function cutPoint(text: string, start: number, limit: number): number {
  const floor = start + Math.floor((limit - start) / 2);
  // Searched in the window's second half only (a search over the whole text would cost O(n) per cut).
  const base = floor - 1;
  const window = text.slice(base, limit);
  const heading = lastHeadingLine(window);
  if (heading !== undefined) return base + heading;
  const blank = window.lastIndexOf('\n\n');
  if (blank >= 1) return base + blank + 2;
  const nl = window.lastIndexOf('\n');
  if (nl >= 1) return base + nl + 1;
  const space = window.lastIndexOf(' ');
  if (space >= 1) return base + space + 1;
  // A surrogate pair is never split.
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}

/** The start of the last `#` heading line in `window` (after its first character), if any. */
function lastHeadingLine(window: string): number | undefined {
  let at = window.lastIndexOf('\n#');
  while (at >= 0) {
    const line = at + 1;
    // `#` to `######` then a space or the end of the line.
    let i = line;
    while (i < line + 6 && window.charCodeAt(i) === 35) i++;
    const after = window.charCodeAt(i);
    if (line > 1 && (after === 32 || after === 9 || after === 10 || Number.isNaN(after))) return line;
    if (at === 0) break;
    at = window.lastIndexOf('\n#', at - 1);
  }
  return undefined;
}

/** The page spans of `[start, end)`, clipped and moved to the segment's offsets. */
export function segmentPages(pages: readonly PageSpan[] | undefined, seg: Segment): PageSpan[] | undefined {
  if (!pages || pages.length === 0) return undefined;
  const out: PageSpan[] = [];
  let holder: PageSpan | undefined;
  for (const p of pages) {
    if (p.start < seg.end && p.end > seg.start) {
      out.push({
        page: p.page,
        start: Math.max(p.start, seg.start) - seg.start,
        end: Math.min(p.end, seg.end) - seg.start,
      });
    } else if (p.start <= seg.start) holder = p;
  }
  // A segment inside no page span (between spans) keeps the page that holds its start.
  if (out.length === 0 && holder) return [{ page: holder.page, start: 0, end: 0 }];
  return out;
}

/** Segments of one document, each with the headings in effect at its start. */
export function documentSegments(
  text: string,
  pages: readonly PageSpan[] | undefined,
  maxChars: number,
): Array<{ segment: Segment; input: ChunkInput }> {
  const segments = segmentSpans(text, maxChars);
  if (segments.length === 1) {
    return [
      { segment: segments[0]!, input: { text, ...(pages && pages.length > 0 ? { pages: [...pages] } : {}) } },
    ];
  }
  let outer: Heading[] = [];
  return segments.map((segment) => {
    const piece = segmentPages(pages, segment);
    const input: ChunkInput = {
      text: text.slice(segment.start, segment.end),
      ...(piece ? { pages: piece } : {}),
      ...(outer.length > 0 ? { outer } : {}),
    };
    outer = headingsAfter(text, segment.start, segment.end, outer);
    return { segment, input };
  });
}
