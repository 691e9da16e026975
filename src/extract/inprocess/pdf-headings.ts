/**
 * PDF text has no heading markup, so the markdown chunker found no breadcrumb in it. This step
 * turns heading lines into Markdown headings (`## Title`) before the pages are joined: from the
 * document outline (bookmarks) when it has one, else from font sizes (lines set larger than the
 * body text). Everything else is left exactly as extracted.
 */

/** One text line of a page and the largest font size (pt) of its non-blank runs. */
export interface PdfLine {
  text: string;
  size: number;
}

/** A flattened outline entry: its title, depth (1 = top level) and 0-based page index. */
export interface OutlineEntry {
  title: string;
  level: number;
  page: number;
}

const MAX_LEVEL = 6;
/** Lines longer than this are body text, however large their font. */
const MAX_HEADING_CHARS = 150;
/** A heading is set at least this much larger than the body text (1 pt, or 8 % of it). */
const MIN_STEP_PT = 1;
const MIN_STEP_RATIO = 0.08;
/** Font-size levels used at most (more distinct sizes share the last level). */
const MAX_SIZE_LEVELS = 4;

const norm = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/** Page texts with heading lines marked; `outline` wins when any of its titles is found. */
export function pageTextsWithHeadings(
  pages: readonly PdfLine[][],
  outline: readonly OutlineEntry[],
): string[] {
  const levels = outline.length > 0 ? levelsFromOutline(pages, outline) : undefined;
  const marked = levels?.some((page) => page.size > 0) ? levels : levelsFromFontSizes(pages);
  return pages.map((lines, p) => render(lines, marked[p] ?? new Map()));
}

/** For each page, line index → heading level, for the outline titles found on their pages. */
function levelsFromOutline(
  pages: readonly PdfLine[][],
  outline: readonly OutlineEntry[],
): Map<number, number>[] {
  const levels = pages.map(() => new Map<number, number>());
  const cursor = pages.map(() => 0);
  for (const entry of outline) {
    const lines = pages[entry.page];
    const title = norm(entry.title);
    if (!lines || title === '') continue;
    for (let i = cursor[entry.page]!; i < lines.length; i++) {
      const one = norm(lines[i]!.text);
      if (one === '') continue;
      // A title wrapped over two lines is matched by the pair.
      const two = i + 1 < lines.length ? norm(`${lines[i]!.text} ${lines[i + 1]!.text}`) : one;
      const span = one === title ? 1 : two === title ? 2 : 0;
      if (span === 0) continue;
      for (let j = 0; j < span; j++) levels[entry.page]!.set(i + j, Math.min(entry.level, MAX_LEVEL));
      cursor[entry.page] = i + span;
      break;
    }
  }
  return levels;
}

/** For each page, line index → heading level, for short lines set clearly larger than the body. */
function levelsFromFontSizes(pages: readonly PdfLine[][]): Map<number, number>[] {
  const chars = new Map<number, number>();
  for (const lines of pages) {
    for (const l of lines) {
      const n = l.text.trim().length;
      if (n > 0) chars.set(round(l.size), (chars.get(round(l.size)) ?? 0) + n);
    }
  }
  let body = 0;
  let most = -1;
  for (const [size, n] of chars) {
    if (n > most || (n === most && size < body)) [body, most] = [size, n];
  }
  const threshold = body + Math.max(MIN_STEP_PT, MIN_STEP_RATIO * body);
  const isHeading = (l: PdfLine) => {
    const t = l.text.trim();
    return round(l.size) >= threshold && t.length <= MAX_HEADING_CHARS && /\p{L}/u.test(t);
  };
  const sizes = [
    ...new Set(pages.flatMap((lines) => lines.filter(isHeading).map((l) => round(l.size)))),
  ].sort((a, b) => b - a);
  const levelOf = (size: number) => Math.min(sizes.indexOf(size) + 1, MAX_SIZE_LEVELS);
  return pages.map((lines) => {
    const m = new Map<number, number>();
    lines.forEach((l, i) => {
      if (isHeading(l)) m.set(i, levelOf(round(l.size)));
    });
    return m;
  });
}

const round = (size: number) => Math.round(size * 2) / 2;

/** Lines joined by newlines; consecutive lines of one heading level become one `#` line. */
function render(lines: readonly PdfLine[], levels: ReadonlyMap<number, number>): string {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const level = levels.get(i);
    if (level === undefined) {
      out.push(lines[i]!.text);
      continue;
    }
    const parts = [lines[i]!.text.trim()];
    while (levels.get(i + 1) === level) parts.push(lines[++i]!.text.trim());
    out.push(`${'#'.repeat(level)} ${parts.filter(Boolean).join(' ')}`);
  }
  return out.join('\n');
}
