import type { ChunkMode } from '../config/chunking.js';
import type { ExtractedDocument } from '../extract/extractor.js';
import { boundariesOf, type DocText, makeChunk } from './chunk-builder.js';
import type { Chunk, Chunker, TokenCounter } from './chunker.js';
import { markdownChunks } from './markdown-chunker.js';
import type { Heading } from './markdown-sections.js';
import { paragraphSpans, type Span, sentenceSpans, wordSpans } from './sentences.js';
import { type Boundaries, tokenWindows, unitWindows } from './windows.js';

export interface ChunkerSettings {
  mode: ChunkMode;
  /** Tokens (token, markdown), words, sentences or passages per chunk. */
  size: number;
  /** Units shared by consecutive chunks; below `size`. */
  overlap: number;
  /** Tokens of the prefix the embedder prepends to each chunk (`EMBEDDING_PREFIX_DOC`). */
  prefixTokens?: number;
  /**
   * The model's input limit (`EMBEDDING_MAX_TOKENS`). Every chunk, in every mode, satisfies
   * prefixTokens + the counter's special tokens + count(content) <= maxTokens; longer chunks are cut
   * on token windows.
   */
  maxTokens?: number;
}

/** Builds the chunker for one mode; throws on settings that cannot produce valid chunks. */
export function createChunker(settings: ChunkerSettings, counter: TokenCounter): Chunker {
  const { mode, size, overlap } = settings;
  if (!Number.isInteger(size) || size < 1)
    throw new Error(`chunk size must be a positive integer, got ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
    throw new Error(`chunk overlap must be an integer in [0, size), got ${overlap} with size ${size}`);
  }
  const reserved = (settings.prefixTokens ?? 0) + (counter.specialTokens ?? 0);
  const limit = settings.maxTokens === undefined ? Number.POSITIVE_INFINITY : settings.maxTokens - reserved;
  if (limit < 8) {
    throw new Error(
      `the model limit of ${settings.maxTokens} tokens leaves ${limit} for text after the prefix and special tokens`,
    );
  }
  // In token units the model limit caps the configured size; overlap shrinks with it.
  const tokenSize = Math.min(size, limit);
  const tokenOverlap = Math.min(overlap, Math.floor(tokenSize / 2));

  return {
    mode,
    chunk(extracted: ExtractedDocument, outer?: readonly Heading[]): Chunk[] {
      const doc: DocText = { text: extracted.text, pages: extracted.pages };
      if (doc.text.trim() === '') return [];
      const tokens = () => counter.offsets(doc.text);
      let cached: Boundaries | undefined;
      const bounds = () => {
        cached ??= boundariesOf(doc.text);
        return cached;
      };
      let chunks: Chunk[];
      switch (mode) {
        case 'token': {
          const toks = tokens();
          chunks = tokenChunks(doc, toks, 0, toks.length, tokenSize, tokenOverlap, bounds());
          break;
        }
        case 'markdown':
          chunks = markdownChunks(doc, tokens(), bounds(), { size: tokenSize, overlap: tokenOverlap }, outer);
          break;
        case 'word':
          chunks = unitChunks(doc, wordSpans(doc.text), size, overlap);
          break;
        case 'sentence':
          chunks = unitChunks(doc, sentenceSpans(doc.text), size, overlap);
          break;
        case 'passage':
          chunks = unitChunks(doc, paragraphSpans(doc.text), size, overlap);
          break;
      }
      if (!Number.isFinite(limit)) return chunks;
      const counts = countAll(
        counter,
        chunks.map((c) => c.content),
      );
      return chunks.flatMap((c, i) =>
        counts[i]! <= limit ? [c] : splitToLimit(doc, c, counter, limit, bounds),
      );
    },
  };
}

function tokenChunks(
  doc: DocText,
  toks: readonly Span[],
  from: number,
  to: number,
  size: number,
  overlap: number,
  bounds: Boundaries,
): Chunk[] {
  const out: Chunk[] = [];
  for (const [a, b] of tokenWindows(toks, from, to, size, overlap, bounds)) {
    const chunk = makeChunk(doc, toks[a]![0], toks[b - 1]![1]);
    if (chunk) out.push(chunk);
  }
  return out;
}

function unitChunks(doc: DocText, units: readonly Span[], size: number, overlap: number): Chunk[] {
  const out: Chunk[] = [];
  for (const [a, b] of unitWindows(units.length, size, overlap)) {
    const chunk = makeChunk(doc, units[a]![0], units[b - 1]![1]);
    if (chunk) out.push(chunk);
  }
  return out;
}

/**
 * Cuts a finished chunk that, counted exactly as the embedder will see it, is over the model
 * limit. Windows are measured on the whole document's tokens, and a substring can tokenize a
 * token or two differently at its edges, so each cut is checked again with a shrinking budget.
 */
function splitToLimit(
  doc: DocText,
  chunk: Chunk,
  counter: TokenCounter,
  limit: number,
  bounds: () => Boundaries,
): Chunk[] {
  const lead = chunk.content.length > chunk.char_end - chunk.char_start ? leadOf(chunk) : undefined;
  const leadTokens = lead === undefined ? 0 : counter.count(lead);
  const slice = doc.text.slice(chunk.char_start, chunk.char_end);
  const local = counter.offsets(slice).map(([s, e]): Span => [s + chunk.char_start, e + chunk.char_start]);
  for (let margin = 0; ; margin += 2) {
    const budget = Math.max(1, limit - leadTokens - margin);
    const parts: Chunk[] = [];
    for (const [a, b] of tokenWindows(local, 0, local.length, budget, 0, bounds())) {
      const extra: { headers?: string[]; lead?: string } = {};
      if (chunk.headers) extra.headers = chunk.headers;
      if (lead !== undefined) extra.lead = lead;
      const part = makeChunk(doc, local[a]![0], local[b - 1]![1], extra);
      if (part) parts.push(part);
    }
    if (
      budget === 1 ||
      countAll(
        counter,
        parts.map((p) => p.content),
      ).every((n) => n <= limit)
    )
      return parts;
  }
}

function countAll(counter: TokenCounter, texts: string[]): number[] {
  return counter.countMany ? counter.countMany(texts) : texts.map((t) => counter.count(t));
}

/** The repeated heading line in front of a continuation chunk's text. */
function leadOf(chunk: Chunk): string {
  const bodyLength = chunk.char_end - chunk.char_start;
  return chunk.content.slice(0, chunk.content.length - bodyLength - 2);
}
