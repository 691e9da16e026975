import { DENSE_VECTOR } from './contract.js';
import type { CollectionInfo, VectorIndex } from './store.js';

export interface DenseSettings {
  VECTORDB_INDEX: string;
  EMBEDDING_PROVIDER?: string | undefined;
  EMBEDDING_DIM?: number | undefined;
}

/**
 * A mismatch under which every dense search fails (the index refuses the query vector), so the
 * service is not ready: the message names both sides and the fix. Undefined when dense search can run.
 */
export function denseMismatch(
  info: CollectionInfo,
  c: DenseSettings,
  what: 'search' | 'ingest' = 'search',
): string | undefined {
  const wantsDense = c.EMBEDDING_PROVIDER !== undefined && c.EMBEDDING_PROVIDER !== 'none';
  if (!info.exists || !wantsDense) return undefined;
  if (info.denseSize === undefined) {
    const found = info.vectorNames.map((n) => `"${n}"`).join(', ') || 'none: it was ingested lexical-only';
    return `collection "${c.VECTORDB_INDEX}" has no "${DENSE_VECTOR}" vector (it has: ${found}) but EMBEDDING_PROVIDER=${c.EMBEDDING_PROVIDER}: every ${what} would fail; set EMBEDDING_PROVIDER=none, or point VECTORDB_INDEX at a collection ingested with dense vectors`;
  }
  if (c.EMBEDDING_DIM !== undefined && info.denseSize !== c.EMBEDDING_DIM) {
    return `collection "${c.VECTORDB_INDEX}" stores ${DENSE_VECTOR} of size ${info.denseSize} but EMBEDDING_DIM=${c.EMBEDDING_DIM}: every ${what} would fail; set EMBEDDING_DIM=${info.denseSize} with the EMBEDDING_MODEL that wrote the collection, or point VECTORDB_INDEX at another collection and re-ingest`;
  }
  return undefined;
}

/** The readiness check of a service that searches or writes dense vectors: reachable, and usable. */
export async function checkDenseUsable(
  index: VectorIndex,
  c: DenseSettings,
  what: 'search' | 'ingest' = 'search',
): Promise<void> {
  const problem = denseMismatch(await index.describe(), c, what);
  if (problem) throw new Error(problem);
}
