import type { Span } from './sentences.js';

/** One heading's section: from its heading line up to the next heading of any level. */
export interface Section {
  /** Breadcrumb, outermost first, ending with this section's own heading (empty before the first). */
  headers: string[];
  /** Heading level 1..6; 0 for the text before the first heading. */
  level: number;
  /** The heading line, trimmed (absent before the first heading). */
  heading?: Span;
  start: number;
  /** First character after the heading line. */
  bodyStart: number;
  end: number;
}

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** A heading in effect: its level and title. */
export interface Heading {
  level: number;
  title: string;
}

/**
 * Splits Markdown on ATX headings (`#` to `######`), ignoring `#` lines inside fenced code blocks.
 * Setext headings are not recognised: extractors emit ATX headings, and `---` under a paragraph is
 * far more often a rule than a heading in converted documents. `outer`: the headings in effect where
 * `text` starts, when it is one segment of a longer document (src/chunk/segments.ts).
 */
export function markdownSections(text: string, outer: readonly Heading[] = []): Section[] {
  const sections: Section[] = [];
  const stack: Heading[] = [...outer];
  let current: Section = {
    headers: stack.map((h) => h.title).filter((t) => t !== ''),
    level: 0,
    start: 0,
    bodyStart: 0,
    end: text.length,
  };
  let fence: string | undefined;
  let pos = 0;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    const line = text.slice(pos, nl);
    const marker = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) {
        if (line.trim() === marker) fence = undefined;
      }
    } else if (marker !== undefined) {
      fence = marker;
    } else {
      const m = ATX.exec(line);
      if (m) {
        const level = m[1]!.length;
        const title = headingText(m[2] ?? '');
        current.end = pos;
        sections.push(current);
        while (stack.length > 0 && stack[stack.length - 1]!.level >= level) stack.pop();
        stack.push({ level, title });
        const lead = line.length - line.trimStart().length;
        current = {
          headers: stack.map((h) => h.title).filter((t) => t !== ''),
          level,
          heading: [pos + lead, pos + line.trimEnd().length],
          start: pos,
          bodyStart: Math.min(text.length, nl + 1),
          end: text.length,
        };
      }
    }
    pos = nl + 1;
  }
  current.end = text.length;
  sections.push(current);
  return sections.filter((s) => s.heading !== undefined || text.slice(s.start, s.end).trim() !== '');
}

/** Heading text without the optional closing `#` sequence. */
function headingText(raw: string): string {
  return raw
    .replace(/(?:^|[ \t]+)#+[ \t]*$/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The headings in effect at the end of `text[from, to)`, given those in effect at `from` (fenced
 * code blocks are followed within the range only).
 */
export function headingsAfter(text: string, from: number, to: number, outer: readonly Heading[]): Heading[] {
  const stack: Heading[] = [...outer];
  let fence: string | undefined;
  let pos = from;
  while (pos < to) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0 || nl > to) nl = to;
    // Only lines that can be a heading or a fence are looked at closely.
    const first = text.charCodeAt(pos + (text.charCodeAt(pos) === 32 ? 1 : 0));
    if (first === 35 || first === 96 || first === 126 || first === 32) {
      const line = text.slice(pos, nl);
      const marker = FENCE.exec(line)?.[1];
      if (fence !== undefined) {
        if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) {
          if (line.trim() === marker) fence = undefined;
        }
      } else if (marker !== undefined) {
        fence = marker;
      } else {
        const m = ATX.exec(line);
        if (m) {
          const level = m[1]!.length;
          while (stack.length > 0 && stack[stack.length - 1]!.level >= level) stack.pop();
          stack.push({ level, title: headingText(m[2] ?? '') });
        }
      }
    }
    pos = nl + 1;
  }
  return stack;
}
