import type { ExtractedDocument, PageSpan } from './extractor.js';

/**
 * Text that is on the page but is not content, dropped after extraction and before chunking, for
 * every engine's output: table-of-contents lines with dot leaders (`2.1 Installing ....... 14`). In a
 * Redbook PDF they made 7 of 41 chunks, each matching every query that names a chapter.
 */
const LEADER_LINE =
  /^[^\n]{1,200}?(?:[.·•…](?:[ \t]?[.·•…]){3,}|_{4,}|(?:-[ \t]?){5,})[ \t]*(?:\d{1,5}|[ivxlcdm]{1,7})[ \t]*$/iu;

export function isLeaderLine(line: string): boolean {
  return LEADER_LINE.test(line.trim());
}

/** The document without its dot-leader lines; page spans are moved to match the shorter text. */
export function dropTableOfContents(doc: ExtractedDocument): ExtractedDocument {
  const { text } = doc;
  if (!/[.·•…_-][ \t]*(?:\d{1,5}|[ivxlcdm]{1,7})[ \t]*$/imu.test(text)) return doc;
  let out = '';
  // Old offset → new offset at each kept or dropped line start, for moving the page spans.
  const marks: [number, number][] = [];
  let pos = 0;
  let dropped = 0;
  while (pos <= text.length) {
    const nl = text.indexOf('\n', pos);
    const end = nl === -1 ? text.length : nl + 1;
    const line = text.slice(pos, nl === -1 ? text.length : nl);
    marks.push([pos, out.length]);
    if (isLeaderLine(line)) dropped += 1;
    else out += text.slice(pos, end);
    if (nl === -1) break;
    pos = end;
  }
  if (dropped === 0) return doc;
  marks.push([text.length + 1, out.length]);
  const move = (offset: number): number => {
    // The last mark at or before the offset; inside a kept line the distance carries over.
    let lo = 0;
    let hi = marks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (marks[mid]![0] <= offset) lo = mid;
      else hi = mid - 1;
    }
    const [oldStart, newStart] = marks[lo]!;
    const next = marks[lo + 1];
    const keptLength = next ? next[1] - newStart : out.length - newStart;
    return Math.min(out.length, newStart + Math.min(offset - oldStart, keptLength));
  };
  const pages: PageSpan[] | undefined = doc.pages?.map((p) => ({
    page: p.page,
    start: move(p.start),
    end: move(p.end),
  }));
  return { ...doc, text: out, ...(pages ? { pages } : {}) };
}
