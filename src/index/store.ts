import type { IndexFilter, IndexPoint, SearchHit, SparseVector, StoredPoint } from './contract.js';

export interface CollectionInfo {
  exists: boolean;
  /** Size of `text-dense`, or undefined when the collection has no dense vector. */
  denseSize?: number;
  hasSparse: boolean;
  vectorNames: string[];
}

export interface ScrollPage {
  points: StoredPoint[];
  /** Opaque cursor for the next page; absent at the end. */
  next?: string;
}

export interface HybridQuery {
  /** Dense query vector; without it hybrid degrades to lexical. */
  dense?: number[];
  /** BM25 query vector (Qdrant's `text-sparse` side). */
  sparse?: SparseVector;
  /** The raw query text (LanceDB's full-text side). */
  text: string;
}

/**
 * The one index interface; Qdrant (production) and LanceDB (embedded) implement it, and one contract
 * suite (test/index/contract-suite.ts) runs against both.
 */
export interface VectorIndex {
  readonly engine: 'qdrant' | 'lancedb';
  /** Creates the collection and payload indexes if missing; fails loudly if an existing one is incompatible. */
  ensureCollection(): Promise<void>;
  /** What exists now (without creating anything). */
  describe(): Promise<CollectionInfo>;
  /** Whether points carry `text-sparse` (Qdrant) / a full-text index exists (LanceDB). Valid after ensure/describe. */
  hasSparse(): boolean;
  /** Writes points (idempotent by id), in batches. */
  upsert(points: readonly IndexPoint[]): Promise<void>;
  /** Deletes every point matching the filter; returns how many were deleted. */
  deleteWhere(filter: IndexFilter): Promise<number>;
  count(filter: IndexFilter): Promise<number>;
  /** Pages through matching points ordered by (file_id, split_id) where the engine allows. */
  scroll(filter: IndexFilter, options: { limit: number; cursor?: string }): Promise<ScrollPage>;
  /** Dense search; scores are normalised cosine in [0, 1]. */
  searchDense(vector: number[], filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Lexical search: Qdrant over `text-sparse` (needs `query.sparse`), LanceDB full-text over content. */
  searchLexical(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Dense + lexical fused server-side (Qdrant Query API RRF) or in the adapter (LanceDB RRF); RRF scores divided by their maximum, in [0, 1]. */
  searchHybrid(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Readiness: the engine answers and the collection exists. */
  ping(signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}
