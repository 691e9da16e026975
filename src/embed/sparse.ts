import type { SparseVector } from '../index/contract.js';

/** Sparse (BM25) encoder, bit-compatible with fastembed's `Qdrant/bm25`. */
export interface SparseEncoder {
  readonly model: string;
  encodeDocuments(texts: readonly string[]): SparseVector[];
  /** Query vectors give every unique token weight 1 (Qdrant applies IDF). */
  encodeQuery(text: string): SparseVector;
}
