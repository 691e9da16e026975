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

export interface ScrollOptions {
  limit: number;
  cursor?: string;
  /**
   * Only each point's meta (its content read as ''): for a look-up of files by their meta, which
   * should not move every chunk's text off the engine (a Qdrant answer without `content`).
   */
  metaOnly?: boolean;
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

/** A question about one file's rows, answered by `PointStore.presence`. */
export interface PresenceQuery {
  fileId: string;
  collectionName: string;
  /** A point id whose existence is asked too. */
  id: string;
  /**
   * The asker's lock on the file is this process's alone (`VersionWrite.exclusive`): a store may
   * answer from what it knows this process wrote, as long as it notices other processes' writes
   * (LanceDB, src/index/lancedb-known.ts).
   */
  exclusive?: boolean;
}

export interface Presence {
  /** Whether any point of the file is in the collection (as `count({fileId, collectionNames}) > 0`). */
  chunks: boolean;
  /** Whether the point with the asked id exists. */
  id: boolean;
}

export interface UpsertOptions {
  /**
   * Every id is new to the store (the caller checked): it may append rather than merge by id, and
   * may hold the batch in a durable journal of its own and commit it with others' within a window
   * (LanceDB, src/index/lancedb-journal.ts): atomic and durable when the call resolves, and seen by
   * every read through this handle at once.
   */
  append?: boolean;
  /**
   * A point written with every part an upsert lands in (Qdrant: every request), so it exists no
   * later than the first of them and its content is fresh in each; an atomic store writes it once,
   * after the others. Called once per part. With no `points` it is written alone.
   */
  withEach?: () => IndexPoint;
  /** Aborted: no further part is sent. */
  signal?: AbortSignal;
}

/** One step of `OrderedWrites.write`: one operation of the engine, never split. */
export type WriteStep = { upsert: readonly IndexPoint[] } | { delete: readonly IndexFilter[] };

/**
 * Steps applied in order in one request (Qdrant's `POST /points/batch`), each one operation of the
 * engine (one entry in Qdrant's write-ahead log, replayed whole after a crash): an upsert step is
 * never split into parts as `upsert` splits its points. The first step that fails stops the rest
 * (those before it stay applied) and the call throws.
 */
export interface OrderedWrites {
  write(steps: readonly WriteStep[], options?: { signal?: AbortSignal }): Promise<void>;
  /** The size of these points in a request (bytes of JSON, estimated from above). */
  weigh(points: readonly IndexPoint[]): number;
  /** The most bytes one request of `write` may weigh (well under the engine's own limit). */
  readonly maxBytes: number;
}

/**
 * Storage only: what the version protocol (src/versions/) needs of an index, and all a backend has
 * to provide for it. The protocol knows versions, ledger entries and tenants; the store knows points.
 */
export interface PointStore {
  /**
   * Whether one `upsert` call lands whole or not at all (LanceDB: one commit). When false it may
   * land in parts (Qdrant: one request per batch of points), and the version protocol stages a
   * version under the staging tenant and moves it into its collection in one `moveTo`.
   */
  readonly atomicUpsert: boolean;
  /** Writes points (idempotent by id), in batches. */
  upsert(points: readonly IndexPoint[], options?: UpsertOptions): Promise<void>;
  /**
   * Deletes every point matching the filter, or any of the filters (one operation: one LanceDB
   * commit, one Qdrant request); returns how many were deleted. With `counted: false` the caller
   * does not need the number, and a store that needs a request of its own to count (Qdrant) answers 0.
   */
  deleteWhere(filter: IndexFilter | readonly IndexFilter[], options?: { counted?: boolean }): Promise<number>;
  /** Points matching the filter, or any of the filters (one request). */
  count(filter: IndexFilter | readonly IndexFilter[]): Promise<number>;
  /**
   * Moves every point matching the filter, or any of the filters, to another tenant (`meta.collection_name`) in one
   * operation (one Qdrant `set_payload`, one LanceDB commit): readers filtering on collection names
   * see all of them move at once. Returns how many matched; with `counted: false` the caller counts
   * afterwards itself, and a store that needs a request of its own to count (Qdrant) answers 0.
   */
  moveTo(
    filter: IndexFilter | readonly IndexFilter[],
    collectionName: string,
    options?: { counted?: boolean },
  ): Promise<number>;
  /** Pages through matching points ordered by (file_id, split_id) where the engine allows. */
  scroll(filter: IndexFilter, options: ScrollOptions): Promise<ScrollPage>;
  /**
   * Whether the file has points in the collection, and whether a point id exists, in one read that
   * concurrent questions may share (LanceDB, src/index/lancedb-presence.ts). Optional: without it
   * the protocol counts and scrolls.
   */
  presence?(query: PresenceQuery): Promise<Presence>;
  /** Several writes in one request, in order (Qdrant). Optional: without it each is its own call. */
  ordered?: OrderedWrites;
}

/**
 * The one index interface; Qdrant (production) and LanceDB (embedded) implement it, and one contract
 * suite (test/index/contract-suite.ts) runs against both: the storage of `PointStore`, search and
 * upkeep.
 */
export interface VectorIndex extends PointStore {
  readonly engine: 'qdrant' | 'lancedb';
  /** Creates the collection and payload indexes if missing; fails loudly if an existing one is incompatible. */
  ensureCollection(): Promise<void>;
  /** What exists now (without creating anything). */
  describe(): Promise<CollectionInfo>;
  /** Whether points carry `text-sparse` (Qdrant) / a full-text index exists (LanceDB). Valid after ensure/describe. */
  hasSparse(): boolean;
  /**
   * The public tenants (`meta.collection_name` values outside the reserved ones) with their chunk
   * counts, at most `limit` of them, by name.
   */
  tenants(limit: number): Promise<TenantCount[]>;
  /** Dense search; scores are normalised cosine in [0, 1]. */
  searchDense(vector: number[], filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Lexical search: Qdrant over `text-sparse` (needs `query.sparse`), LanceDB full-text over content. */
  searchLexical(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]>;
  /** Dense + lexical fused server-side (Qdrant Query API RRF) or in the adapter (LanceDB RRF); RRF scores divided by their maximum, in [0, 1]. */
  searchHybrid(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]>;
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
  /** Readiness: the engine answers and the collection exists. */
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
