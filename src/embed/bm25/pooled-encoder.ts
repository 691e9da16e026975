import type { SparseVector } from '../../index/contract.js';
import type { WorkerPool } from '../../pool/worker-pool.js';
import type { SparseEncoder } from '../sparse.js';

/** Encodes a document's chunks in one call that may run elsewhere (the ingestion pipeline's form). */
export interface DocumentSparseEncoder {
  readonly model: string;
  encodeDocuments(texts: readonly string[], signal?: AbortSignal): Promise<SparseVector[]>;
}

/**
 * BM25 document vectors computed in the worker pool (a large document's chunks take seconds to
 * stem and hash); `inner` names the model and must match what the pool was set up with.
 */
export function createPooledSparseEncoder(pool: WorkerPool, inner: SparseEncoder): DocumentSparseEncoder {
  return {
    model: inner.model,
    async encodeDocuments(texts, signal) {
      if (texts.length === 0) return [];
      const { offsets, indices, values } = await pool.run({ kind: 'sparse', texts }, { signal });
      const out: SparseVector[] = new Array(texts.length);
      for (let i = 0; i < texts.length; i++) {
        const a = offsets[i]!;
        const b = offsets[i + 1]!;
        out[i] = { indices: Array.from(indices.subarray(a, b)), values: Array.from(values.subarray(a, b)) };
      }
      return out;
    },
  };
}
