import type { IndexFilter, IndexPoint, SearchHit, SparseVector, StoredPoint } from './contract.js';

export interface CollectionInfo {
  exists: boolean;
  /** Size of `text-dense`, or undefined when the collection has no dense vector. */
  denseSize?: number;
  hasSparse: boolean;
  vectorNames: string[];
  /**
   * LanceDB: every `SPARSE_LANGUAGE` documents without a detected language were analysed in, as the
   * table recorded them; a query is analysed in these too. Absent where the engine keeps no record.
   */
  fallbackLanguages?: string[];
}

export interface TenantCount {
  name: string;
  chunks: number;
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
  /** The raw query text. */
  text: string;
  /**
   * The query's analysed terms (LanceDB's full-text side; the same analysis as `IndexPoint.lexical`).
   * Without them LanceDB splits `text` into lower-cased words itself.
   */
  terms?: readonly string[];
}

/** One new version of one file, as `VectorIndex.writeVersion` makes it visible (src/ingest/versioning.ts). */
export interface VersionWrite {
  fileId: string;
  collectionName: string;
  version: string;
  /** The chunks, stamped with `collectionName` and `version`. */
  points: readonly IndexPoint[];
  /** The ledger entry saying this version is being written; built afresh for every write (its clock moves). */
  writing: () => IndexPoint;
  /** The ledger entry naming this version the committed one of the file in its collection. */
  committed: IndexPoint;
  /** Aborted: stop before the version becomes visible (nothing of it will be). */
  signal?: AbortSignal;
  /**
   * Points of this version already written by `stageVersion` (a large file streamed in batches):
   * they become visible together with `points`, in the same step. 0 or absent: `points` is the
   * whole version.
   */
  staged?: number;
  /**
   * The caller's lock on the file is this process's alone (not a lease shared by replicas), so no
   * other writer can add the file's rows meanwhile: a version of a file with nothing in the index
   * yet (no chunk in the collection, no `committed` entry) may be appended without a merge by id.
   */
  exclusive?: boolean;
}

/** One batch of a version that is streamed in parts (`VectorIndex.stageVersion`). */
export interface StagedBatch {
  fileId: string;
  collectionName: string;
  version: string;
  /** This batch's chunks, stamped with `collectionName` and `version`. */
  points: readonly IndexPoint[];
  /** The `writing` ledger entry, counting every point staged so far including this batch. */
  writing: () => IndexPoint;
  signal?: AbortSignal;
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
  /**
   * Makes a new version of a file visible as a whole, never in part: when it resolves every point
   * (and the `committed` entry) is there; until then no reader filtering on collection names sees
   * any of them. LanceDB writes points and entries in one commit, and no `writing` entry when the
   * file has no other version in that collection (a first ingest has nothing to retire). Qdrant,
   * whose requests apply in parts, writes the points under the staging tenant (with the `writing`
   * entry in every request), moves them to their collection in one operation and checks the count
   * before writing `committed`. On failure what was written stays for the caller to delete (the
   * `writing` entry marks it). Resolves with whether a `writing` entry was left for the retirement.
   */
  writeVersion(version: VersionWrite): Promise<{ writing: boolean }>;
  /**
   * Writes one batch of a version that is too large to hold at once, invisible to every reader
   * filtering on collection names: the points go under the staging tenant together with the
   * `writing` entry (which marks them for the sweep should the process die). A later
   * `writeVersion` with `staged` set makes them visible with its own points, as a whole.
   */
  stageVersion(batch: StagedBatch): Promise<void>;
  /**
   * Deletes every point matching the filter, or any of the filters (one operation: one LanceDB
   * commit, one Qdrant request); returns how many were deleted.
   */
  deleteWhere(filter: IndexFilter | readonly IndexFilter[]): Promise<number>;
  count(filter: IndexFilter): Promise<number>;
  /**
   * Moves every point matching the filter to another tenant (`meta.collection_name`) in one
   * operation (one Qdrant `set_payload`, one LanceDB commit): readers filtering on collection names
   * see all of them move at once. Returns how many matched.
   */
  moveTo(filter: IndexFilter, collectionName: string): Promise<number>;
  /**
   * The public tenants (`meta.collection_name` values outside the reserved ones) with their chunk
   * counts, at most `limit` of them, by name.
   */
  tenants(limit: number): Promise<TenantCount[]>;
  /** Pages through matching points ordered by (file_id, split_id) where the engine allows. */
  scroll(filter: IndexFilter, options: { limit: number; cursor?: string }): Promise<ScrollPage>;
  /** Dense search; scores are normalised cosine in [0, 1]. */
  searchDense(vector: number[], filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Lexical search: Qdrant over `text-sparse` (needs `query.sparse`), LanceDB full-text over content. */
  searchLexical(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Dense + lexical fused server-side (Qdrant Query API RRF) or in the adapter (LanceDB RRF); RRF scores divided by their maximum, in [0, 1]. */
  searchHybrid(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Readiness: the engine answers and the collection exists. */
  /**
   * A number that moves whenever a write to the collection from this process lands (through any
   * handle on it), so caches of what the collection holds can refresh at once after an in-process
   * ingest instead of waiting out their time-to-live. Absent where the engine keeps no such count.
   */
  writeEpoch?(): number;
  /**
   * Finishes the engine's own upkeep behind the writes made so far (LanceDB: the pending optimize
   * and a due vector index build), for a process about to exit after a run of writes; resolves to
   * whether there was work to do. Absent where the engine keeps its indexes itself (Qdrant).
   */
  settle?(): Promise<boolean>;
  ping(signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/**
 * Candidates each branch of a hybrid query contributes before fusion (both engines): more than
 * `limit`, so fusion can reorder. `explain` reads the branches with the same limit.
 */
export function hybridBranchLimit(limit: number): number {
  return Math.max(limit * 2, 20);
}

/** The filters of a `deleteWhere` call as a list. */
export function filterList(filter: IndexFilter | readonly IndexFilter[]): readonly IndexFilter[] {
  return isList(filter) ? filter : [filter];
}

function isList(f: IndexFilter | readonly IndexFilter[]): f is readonly IndexFilter[] {
  return Array.isArray(f);
}
