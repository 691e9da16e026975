import type { SearchHit } from '../index/contract.js';

/**
 * Every `/search` path answers scores in [0, 1], higher = better, in the order of the ranking, so the
 * chat platform can show a percentage and threshold it. Dense (normalised cosine) and hybrid
 * (RRF divided by its maximum) already are; these map the two unbounded scales.
 */

/** The BM25 score that maps to 0.5: about one rare query term matched well in a mid-sized collection. */
export const LEXICAL_HALF_SCORE = 8;

/**
 * BM25 (LanceDB full-text, Qdrant `text-sparse` with IDF, client-side BM25) → s / (s + 8): strictly
 * increasing, 0 for no match, 0.5 at 8, 0.86 at 50; the same mapping for every query.
 */
export function lexicalScore(bm25: number): number {
  return bm25 <= 0 ? 0 : bm25 / (bm25 + LEXICAL_HALF_SCORE);
}

export function withLexicalScores<T extends SearchHit>(hits: readonly T[]): T[] {
  return hits.map((h) => ({ ...h, score: lexicalScore(h.score) }));
}

/**
 * Rerankers answer relevance in [0, 1] (Cohere, Jina, TEI's default); kept as they are. A reranker
 * that answers raw logits (any score outside [0, 1]) gets the logistic function, which is what its
 * [0, 1] scale would have been.
 */
export function rerankScores(scores: readonly number[]): number[] {
  if (scores.every((s) => s >= 0 && s <= 1)) return [...scores];
  return scores.map((s) => 1 / (1 + Math.exp(-s)));
}
