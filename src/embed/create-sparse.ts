import { BM25_MODEL, Bm25Encoder } from './bm25/encoder.js';
import type { SparseEncoder } from './sparse.js';

export const SUPPORTED_SPARSE_MODELS: readonly string[] = [BM25_MODEL];

/**
 * The sparse encoder named by SPARSE_EMBEDDING_MODEL / SPARSE_QUERY_MODEL. An unknown name is a
 * start-up error: a silent fallback would write (or query with) vectors that match nothing.
 * Names compare case-insensitively, as fastembed compares them.
 */
export function createSparseEncoder(model: string, language: 'english' | 'danish'): SparseEncoder {
  if (model.toLowerCase() === BM25_MODEL.toLowerCase()) return new Bm25Encoder({ language });
  throw new Error(
    `Unsupported sparse embedding model "${model}": supported models are ${SUPPORTED_SPARSE_MODELS.map((m) => `"${m}"`).join(', ')}`,
  );
}
