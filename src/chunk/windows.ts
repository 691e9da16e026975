import type { Span } from './sentences.js';

/** Sentence boundaries of a document, as character positions, for cutting at natural places. */
export interface Boundaries {
  sentenceStarts: Set<number>;
  sentenceEnds: Set<number>;
  /** Starts of Markdown heading lines: the best place to end a chunk is right before one. */
  headingStarts?: Set<number>;
}

/** A chunk may end this much short of its budget to end at a sentence or word boundary. */
const SLACK = 0.3;

/**
 * Windows over tokens `[from, to)` of `toks`, each at most `budget` tokens, consecutive windows
 * sharing about `overlap` tokens. A window prefers to end before a heading, else at a sentence end,
 * else between words, within the last 30% of its budget; the next one prefers to start at a sentence start, else a word
 * start, inside the overlap. Returns token index ranges [start, end).
 */
export function tokenWindows(
  toks: readonly Span[],
  from: number,
  to: number,
  budget: number,
  overlap: number,
  bounds: Boundaries,
): Span[] {
  const out: Span[] = [];
  const ov = Math.max(0, Math.min(overlap, budget - 1));
  let start = from;
  while (start < to) {
    if (to - start <= budget) {
      out.push([start, to]);
      break;
    }
    const hardEnd = start + budget;
    const minEnd = Math.max(start + ov + 1, start + Math.ceil(budget * (1 - SLACK)));
    const headings = bounds.headingStarts;
    const end =
      (headings && findDown(hardEnd, minEnd, (e) => headings.has(toks[e]![0]))) ??
      findDown(hardEnd, minEnd, (e) => bounds.sentenceEnds.has(toks[e - 1]![1])) ??
      findDown(hardEnd, minEnd, (e) => isGap(toks, e)) ??
      hardEnd;
    out.push([start, end]);
    start = Math.max(overlapStart(toks, start, end, ov, bounds), start + 1);
  }
  return out;
}

/**
 * Where the successor of the window [start, end) begins so that it shares at most `overlap` tokens:
 * the first sentence start inside the overlap, else the first word start, else exactly `overlap`
 * tokens back. `end` when there is no overlap.
 */
export function overlapStart(
  toks: readonly Span[],
  start: number,
  end: number,
  overlap: number,
  bounds: Boundaries,
): number {
  if (overlap <= 0) return end;
  const lo = Math.max(start + 1, end - overlap);
  if (lo >= end) return end;
  return (
    findUp(lo, end, (j) => bounds.sentenceStarts.has(toks[j]![0])) ??
    findUp(lo, end, (j) => isGap(toks, j)) ??
    lo
  );
}

/** Windows of `size` units with `overlap` units shared (word, sentence and passage modes). */
export function unitWindows(count: number, size: number, overlap: number): Span[] {
  const out: Span[] = [];
  const ov = Math.max(0, Math.min(overlap, size - 1));
  for (let start = 0; start < count; start += size - ov) {
    const end = Math.min(count, start + size);
    out.push([start, end]);
    if (end === count) break;
  }
  return out;
}

/** Whether token `i` begins a new word: text (whitespace) lies between it and token `i - 1`. */
function isGap(toks: readonly Span[], i: number): boolean {
  const prev = toks[i - 1];
  const cur = toks[i];
  return prev !== undefined && cur !== undefined && cur[0] > prev[1];
}

function findDown(from: number, downTo: number, ok: (i: number) => boolean): number | undefined {
  for (let i = from; i >= downTo; i--) if (ok(i)) return i;
  return undefined;
}

function findUp(from: number, below: number, ok: (i: number) => boolean): number | undefined {
  for (let i = from; i < below; i++) if (ok(i)) return i;
  return undefined;
}

/** Index of the first token starting at or after `pos` (tokens sorted by start). */
export function firstTokenAt(toks: readonly Span[], pos: number): number {
  let lo = 0;
  let hi = toks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (toks[mid]![0] < pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
