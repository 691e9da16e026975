import { Index, type IndexConfig, type Table, type VectorQuery } from '@lancedb/lancedb';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { DENSE_COLUMN, LEGACY_DENSE_COLUMN } from './lancedb-rows.js';

/**
 * The dense vector index of a LanceDB table, in two tiers by the table's rows:
 *
 * - Below `minRows`: none. Every dense search is an exact scan of the tenant's rows in the data
 *   files (reading and decoding the vector column on every query).
 * - From `minRows`: an **exact** index, IVF-Flat with one partition: the full vectors, copied once
 *   into the index and held in LanceDB's index cache, scanned in memory. Same results as the scan
 *   (recall 1), at a fraction of its cost (10k chunks: 3.6 against 9.6 ms; 100k: 15 against 82 ms
 *   at p50, docs/performance.md); nothing to train, built in seconds; memory: rows × dim × 4 bytes.
 * - From `annMinRows`: an **approximate** index replacing it, one HNSW graph over 8-bit
 *   scalar-quantized vectors (LanceDB's IVF-HNSW-SQ with a single IVF partition), searched with `ef`
 *   candidates whose full vectors re-rank them (`refine`). Trained again each time the table has
 *   grown 4×.
 *
 * Both are built by the writer in the background after an optimize; optimizes fold new rows into
 * them meanwhile, and rows not yet folded in are searched exactly. LanceDB (0.37–0.39) fails every
 * `optimize()` of a table whose vector index over a column that needs quoting has more than one IVF
 * partition, or has grown in segments ("vector column `text-dense` not found in batch"), which would
 * stop compaction and full-text index updates for good: the column is therefore `text_dense`
 * (`DENSE_COLUMN`; test/index/lancedb-dense-column.test.ts). Both kinds keep one partition, as
 * measured (docs/performance.md).
 */
export interface VectorIndexSettings {
  /** Rows (the table's, ledger entries included) from which a dense index is built; 0 never builds one. */
  minRows: number;
  /** Rows from which the index is approximate (HNSW-SQ) instead of exact (IVF-Flat); at or below `minRows`, always approximate. */
  annMinRows: number;
  /** HNSW candidates kept while searching the graph (Qdrant's `hnsw_ef`). */
  ef: number;
  /**
   * LanceDB's refine factor: the graph search (over 8-bit quantized vectors) yields `limit × refine`
   * candidates, which are re-ranked by their full vectors before the first `limit` are kept (Qdrant:
   * `quantization.rescore` with `oversampling`). 0: no refine step (quantized distances as they come).
   */
  refine: number;
}

export const DEFAULT_VECTOR_INDEX: VectorIndexSettings = {
  minRows: 5_000,
  annMinRows: 200_000,
  ef: 400,
  refine: 2,
};

/** The approximate index is trained again (replacing the old one) once the table has grown this many times over. */
export const RETRAIN_GROWTH = 4;

/** The two kinds Kilde builds: `exact` (IVF-Flat, one partition) and `ann` (IVF-HNSW-SQ, one partition). */
export type DenseIndexKind = 'exact' | 'ann';

const NAME_PREFIX: Record<DenseIndexKind, string> = { ann: 'text_dense_idx_', exact: 'text_dense_flat_' };

/**
 * The index's name records its kind and the rows it was built on (`text_dense_idx_<rows>` for the
 * approximate one, the name it always had; `text_dense_flat_<rows>` for the exact one), so any
 * process can tell when the table has outgrown it without an extra commit for bookkeeping.
 */
export function vectorIndexName(kind: DenseIndexKind, rows: number): string {
  return `${NAME_PREFIX[kind]}${rows}`;
}

/** Whether an index covers `text-dense` (LanceDB lists that column quoted: `` `text-dense` ``). */
export function isDenseIndex(index: IndexConfig): boolean {
  const column = index.columns.length === 1 ? index.columns[0]!.replaceAll('`', '') : undefined;
  return column === DENSE_COLUMN || column === LEGACY_DENSE_COLUMN;
}

/** The table's dense index as Kilde named it: its kind and the rows it was built on. */
export interface BuiltDenseIndex {
  /** Undefined for an index made by hand under another name: Kilde never replaces it. */
  kind: DenseIndexKind | undefined;
  rows: number;
}

/** The table's dense index, or undefined when it has none. */
export function denseIndexOf(indices: readonly IndexConfig[]): BuiltDenseIndex | undefined {
  const found = indices.find(isDenseIndex);
  if (!found) return undefined;
  for (const kind of ['ann', 'exact'] as const) {
    const prefix = NAME_PREFIX[kind];
    const n = found.name.startsWith(prefix) ? Number(found.name.slice(prefix.length)) : Number.NaN;
    if (Number.isFinite(n)) return { kind, rows: n };
  }
  return { kind: undefined, rows: Number.POSITIVE_INFINITY };
}

/** Whether the dense index LanceDB lists is one that stores quantized vectors (a refine step helps). */
export function isQuantizedIndex(index: IndexConfig): boolean {
  return isDenseIndex(index) && !/flat/i.test(index.indexType);
}

/** Which kind a table of `rows` rows calls for; undefined: none. */
export function kindFor(rows: number, s: VectorIndexSettings): DenseIndexKind | undefined {
  if (s.minRows <= 0 || rows < s.minRows) return undefined;
  return rows >= s.annMinRows || s.annMinRows <= s.minRows ? 'ann' : 'exact';
}

/**
 * Index parameters. Exact: IVF-Flat, one partition. Approximate: one partition (see above), HNSW
 * `m` 16 and `ef_construction` 100 (Qdrant's defaults, cheaper to build than LanceDB's 20 / 300;
 * recall and build times in docs/performance.md). Cosine distance, as every query uses.
 */
export function vectorIndexConfig(kind: DenseIndexKind): Index {
  return kind === 'exact'
    ? Index.ivfFlat({ distanceType: 'cosine', numPartitions: 1 })
    : Index.hnswSq({ distanceType: 'cosine', numPartitions: 1, m: 16, efConstruction: 100 });
}

/**
 * Applies the query-time settings; LanceDB ignores them while the table has no index. `quantized`
 * says whether the table's index is the approximate one: only its candidates are re-ranked (the
 * exact index holds the full vectors already; a refine step would only read them again). The tenant
 * filter stays a prefilter (LanceDB's default): the search only ever yields the tenant's rows, and a
 * tenant with few rows still gets k of them.
 */
export function tuneVectorQuery(
  query: VectorQuery,
  s: VectorIndexSettings,
  limit: number,
  quantized: boolean,
): VectorQuery {
  const refine = quantized ? s.refine : 0;
  // LanceDB refuses a graph search asked for more rows than it keeps candidates ("ef must be greater
  // than or equal to k"), so a large `limit` (k 100 with over-fetch, a reranker's pool) raises ef.
  const tuned = query.ef(Math.max(s.ef, limit * Math.max(refine, 1)));
  return refine > 0 ? tuned.refineFactor(refine) : tuned;
}

/**
 * Builds the dense index the table calls for, when it differs from the one it has: none yet and at
 * least `minRows` rows; the exact one outgrown (`annMinRows`); or an approximate one trained on a
 * quarter of today's rows or fewer. An index made by hand under another name is left alone.
 * Returns whether it built.
 */
export async function buildVectorIndexIfDue(
  table: Table,
  s: VectorIndexSettings,
  deps: {
    log: Logger;
    now: () => number;
    onStart?: (() => Promise<void> | void) | undefined;
    /** The vectors' size and the index cache's bound, to warn when the index will not fit in it. */
    cache?: { dim: number; indexCacheMb: number };
  },
): Promise<boolean> {
  const { log } = deps;
  if (s.minRows <= 0) return false;
  const indices = await table.listIndices();
  const built = denseIndexOf(indices);
  if (built !== undefined && built.kind === undefined) return false;
  const rows = await table.countRows();
  const kind = kindFor(rows, s);
  if (kind === undefined) return false;
  const due =
    built === undefined ||
    (built.kind === 'exact' && kind === 'ann') ||
    (built.kind === 'ann' && rows >= built.rows * RETRAIN_GROWTH);
  if (!due) return false;
  await deps.onStart?.();
  const started = deps.now();
  const was = built === undefined ? {} : { replacing: built.kind, builtOn: built.rows };
  log.info({ table: table.name, rows, kind, ...was }, 'building the dense vector index');
  const name = vectorIndexName(kind, rows);
  await table.createIndex(DENSE_COLUMN, { config: vectorIndexConfig(kind), name, replace: true });
  // The new index answers queries from its commit on; the old one (another name) is dropped after.
  for (const old of indices) {
    if (isDenseIndex(old) && old.name !== name) await table.dropIndex(old.name);
  }
  log.info({ table: table.name, rows, kind, ms: deps.now() - started }, 'dense vector index built');
  if (deps.cache) warnIfOverCache(log, table.name, rows, kind, deps.cache);
  return true;
}

/** Bytes LanceDB's index cache holds for a dense index (HNSW: 8-bit vectors and ~2 × 20 neighbours of 4 bytes). */
export function denseIndexBytes(kind: DenseIndexKind, rows: number, dim: number): number {
  return kind === 'exact' ? rows * dim * 4 : rows * (dim + 160);
}

/**
 * An index larger than the cache is evicted piece by piece, and searches read it back from disk on
 * every query: correct, but many times slower. Said once per build, where an operator looks.
 */
function warnIfOverCache(
  log: Logger,
  table: string,
  rows: number,
  kind: DenseIndexKind,
  cache: { dim: number; indexCacheMb: number },
): void {
  const indexMb = Math.ceil(denseIndexBytes(kind, rows, cache.dim) / 1048576);
  if (indexMb <= cache.indexCacheMb * 0.75) return;
  log.warn(
    { table, rows, kind, indexMb, indexCacheMb: cache.indexCacheMb },
    'the dense vector index takes most or more of LANCEDB_INDEX_CACHE_MB: raise it, or searches read the index from disk',
  );
}

/** How long the kind of a table's dense index, once looked up, is taken as known. */
const DENSE_KIND_TTL_MS = 10_000;

/**
 * Whether a table's dense index is the quantized one, looked up at most every DENSE_KIND_TTL_MS
 * (the writer, maybe in another process, replaces the exact index by the approximate one as the
 * table grows); concurrent searches share one look-up.
 */
export class DenseKindCache {
  #quantized = false;
  #at = Number.NEGATIVE_INFINITY;
  #pending: Promise<boolean> | undefined;

  constructor(private readonly clock: Clock) {}

  quantized(table: Table): Promise<boolean> {
    if (this.clock.now() - this.#at < DENSE_KIND_TTL_MS) return Promise.resolve(this.#quantized);
    this.#pending ??= table
      .listIndices()
      .then((indices) => {
        this.#quantized = indices.some(isQuantizedIndex);
        this.#at = this.clock.now();
        return this.#quantized;
      })
      .finally(() => {
        this.#pending = undefined;
      });
    return this.#pending;
  }
}
