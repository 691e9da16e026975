import { type DocText, makeChunk } from './chunk-builder.js';
import type { Chunk } from './chunker.js';
import { type Heading, markdownSections, type Section } from './markdown-sections.js';
import { paragraphSpans, type Span } from './sentences.js';
import { type Boundaries, firstTokenAt, overlapStart, tokenWindows } from './windows.js';

export interface PackSettings {
  /** Token budget of one chunk's content. */
  size: number;
  overlap: number;
}

/**
 * Markdown mode: sections first (their breadcrumb goes to `headers`), then each section's paragraphs
 * packed up to `size` tokens. A paragraph too long for one chunk is cut with the token windows.
 * Overlap stays inside a section. The first chunk of a section starts with its heading line; later
 * chunks of the same section repeat that line in `content` (not in the offsets) so a lexical search
 * for the heading still finds them.
 */
export function markdownChunks(
  doc: DocText,
  toks: readonly Span[],
  bounds: Boundaries,
  s: PackSettings,
  outer: readonly Heading[] = [],
): Chunk[] {
  const out: Chunk[] = [];
  const sections = markdownSections(doc.text, outer);
  let pendingStart: number | undefined;
  for (let i = 0; i < sections.length; i++) {
    const section = sections[i]!;
    const next = sections[i + 1];
    const bodyEmpty = doc.text.slice(section.bodyStart, section.end).trim() === '';
    // A heading directly followed by a sub-heading joins its child's first chunk.
    if (bodyEmpty && next && next.level > section.level) {
      pendingStart ??= section.start;
      continue;
    }
    packSection(doc, toks, bounds, s, section, pendingStart ?? section.start, out);
    pendingStart = undefined;
  }
  return out;
}

function packSection(
  doc: DocText,
  toks: readonly Span[],
  bounds: Boundaries,
  s: PackSettings,
  section: Section,
  from: number,
  out: Chunk[],
): void {
  const count = (a: number, b: number) => firstTokenAt(toks, b) - firstTokenAt(toks, a);
  const headingLine = section.heading ? doc.text.slice(section.heading[0], section.heading[1]) : undefined;
  const headingTokens = section.heading ? count(section.heading[0], section.heading[1]) : 0;
  // Repeat the heading only while it leaves most of the budget to the text.
  const lead = headingLine !== undefined && headingTokens <= s.size / 4 ? headingLine : undefined;
  const contSize = lead === undefined ? s.size : s.size - headingTokens;
  const headers = section.headers;
  let emitted = 0;
  const emit = (a: number, b: number) => {
    const repeat =
      emitted > 0 && lead !== undefined && section.heading !== undefined && a >= section.heading[1];
    const chunk = makeChunk(doc, a, b, repeat ? { headers, lead } : { headers });
    if (chunk) {
      out.push(chunk);
      emitted++;
    }
  };
  const successorStart = (a: number, b: number): number => {
    const te = firstTokenAt(toks, b);
    const j = overlapStart(toks, firstTokenAt(toks, a), te, s.overlap, bounds);
    return j < te ? toks[j]![0] : b;
  };

  let cur = from;
  let curEnd = from;
  let hasNew = false;
  for (const block of paragraphSpans(doc.text, from, section.end)) {
    for (;;) {
      const budget = emitted === 0 ? s.size : contSize;
      if (count(cur, block[1]) <= budget) {
        curEnd = block[1];
        hasNew = true;
        break;
      }
      // A block that must be cut on token windows anyway takes the pending short paragraphs (a
      // title line, a lead-in) into its first window, instead of leaving them a chunk of their own.
      if (hasNew && count(block[0], block[1]) <= contSize) {
        emit(cur, curEnd);
        cur = successorStart(cur, curEnd);
        hasNew = false;
        continue;
      }
      // Even alone the block (plus any overlap) is too long: cut it on token windows.
      const windows = tokenWindows(
        toks,
        firstTokenAt(toks, cur),
        firstTokenAt(toks, block[1]),
        contSize,
        s.overlap,
        bounds,
      );
      for (const [a, b] of windows.slice(0, -1)) emit(toks[a]![0], toks[b - 1]![1]);
      const last = windows[windows.length - 1];
      // The last window stays open so the following short paragraphs can join it.
      cur = last ? toks[last[0]]![0] : block[0];
      curEnd = block[1];
      hasNew = true;
      break;
    }
  }
  if (hasNew) emit(cur, curEnd);
  else if (emitted === 0 && section.heading) emit(section.start, section.end);
}
