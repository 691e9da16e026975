import type { TokenCounter } from '../chunk/chunker.js';

/**
 * Long inputs are never dropped or truncated. The reference deployment lost whole batches when one
 * chunk ran over the model's input limit, and truncating silently drops the tail of a chunk from the
 * index. Kilde instead cuts an over-long input into windows that fit the budget (prefix and the
 * model's special tokens included), embeds every window, and represents the input by the
 * token-weighted mean of the (unit-length) window vectors, re-normalised to unit length. That is the
 * usual "chunk-and-average" reduction for bi-encoders: the pooled vector stays in the model's space
 * and cosine-comparable with single-window vectors.
 */

/** Tokens a BERT-like model adds around every input ([CLS] … [SEP]) when the counter does not say. */
export const DEFAULT_SPECIAL_TOKENS = 2;

/** Special tokens the counter reports, else the default. */
export function specialTokensOf(counter: TokenCounter): number {
  return counter.specialTokens ?? DEFAULT_SPECIAL_TOKENS;
}

export interface Window {
  text: string;
  /** Token count of `text` (without prefix); the window's weight when pooling. */
  tokens: number;
}

/** Tokens left for the text itself once the prefix and special tokens are paid for. */
export function textBudget(maxTokens: number, prefix: string, counter: TokenCounter): number {
  const prefixTokens = counter.count(prefix);
  const budget = maxTokens - prefixTokens - specialTokensOf(counter);
  if (budget < 1) {
    throw new Error(
      `EMBEDDING_MAX_TOKENS=${maxTokens} leaves no room for text after the prefix ${JSON.stringify(prefix)} (${prefixTokens} tokens) and ${specialTokensOf(counter)} special tokens`,
    );
  }
  return budget;
}

/**
 * Cuts `text` at token boundaries into windows of at most `budget` tokens each; one window if it fits.
 * A cut inside a word (between two touching tokens, e.g. WordPiece `##` pieces) moves back to the
 * last gap between tokens, as long as that keeps at least half the window.
 */
export function splitToBudget(
  text: string,
  budget: number,
  counter: TokenCounter,
  counted?: number,
): Window[] {
  const total = counted ?? counter.count(text);
  if (total <= budget) return [{ text, tokens: total }];
  const offsets = counter.offsets(text);
  const windows: Window[] = [];
  for (let i = 0; i < offsets.length; ) {
    let next = Math.min(i + budget, offsets.length);
    if (next < offsets.length) {
      let cut = next;
      while (cut > i + budget / 2 && !gapBefore(offsets, cut)) cut--;
      if (gapBefore(offsets, cut)) next = cut;
    }
    const start = offsets[i]?.[0] ?? 0;
    const end = offsets[next - 1]?.[1] ?? text.length;
    windows.push({ text: text.slice(start, end), tokens: next - i });
    i = next;
  }
  return windows;
}

/** Characters counted between two yields to the event loop when the counter has no async form. */
const SLICE_CHARS = 256 * 1024;

/**
 * Token counts of many texts (a document's chunks) without holding the event loop: the tokenizer
 * thread's async batch when the counter has one, else the counter in slices with a yield between.
 */
export async function countAll(counter: TokenCounter, texts: readonly string[]): Promise<number[]> {
  if (counter.countManyAsync) return counter.countManyAsync([...texts]);
  const out: number[] = [];
  let chars = 0;
  for (const text of texts) {
    out.push(counter.count(text));
    chars += text.length;
    if (chars >= SLICE_CHARS) {
      chars = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return out;
}

/** Whether token `i` starts after a gap (whitespace) rather than touching token `i - 1`. */
function gapBefore(offsets: Array<[number, number]>, i: number): boolean {
  const prev = offsets[i - 1];
  const cur = offsets[i];
  return prev !== undefined && cur !== undefined && cur[0] > prev[1];
}

/** Splits a window in two at its middle token; undefined when it has fewer than two tokens. */
export function halve(text: string, counter: TokenCounter): [Window, Window] | undefined {
  const offsets = counter.offsets(text);
  if (offsets.length < 2) return undefined;
  const mid = Math.floor(offsets.length / 2);
  const cut = offsets[mid]?.[0] ?? Math.floor(text.length / 2);
  return [
    { text: text.slice(0, cut), tokens: mid },
    { text: text.slice(cut), tokens: offsets.length - mid },
  ];
}

/** Token-weighted mean of the unit-normalised vectors, re-normalised to unit length. */
export function poolVectors(vectors: readonly (readonly number[])[], weights: readonly number[]): number[] {
  const dim = vectors[0]?.length ?? 0;
  const sum = new Array<number>(dim).fill(0);
  vectors.forEach((v, i) => {
    const w = Math.max(weights[i] ?? 1, 1);
    const norm = l2(v) || 1;
    for (let d = 0; d < dim; d++) sum[d] = (sum[d] ?? 0) + (w * (v[d] ?? 0)) / norm;
  });
  const norm = l2(sum) || 1;
  return sum.map((x) => x / norm);
}

function l2(v: readonly number[]): number {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}
