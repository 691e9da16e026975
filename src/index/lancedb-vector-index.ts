import { Index, type IndexConfig, type Table, type VectorQuery } from '@lancedb/lancedb';
import type { Logger } from 'pino';
import { DENSE_VECTOR } from './contract.js';

/**
 * The dense vector index of a LanceDB table. Without one every dense search is an exact scan of the
 * tenant's rows, which grows linearly with the table (113 ms at 100k chunks, 664 ms at 500k on the
 * 2-core reference machine); past `minRows` rows the writer builds an approximate index in the
 * background: one HNSW graph over 8-bit scalar-quantized vectors (LanceDB's IVF-HNSW-SQ with a
 * single IVF partition). With LanceDB 0.37.1 an `optimize()` fails on a table whose vector index
 * over a column that needs quoting, as `text-dense` does, has more than one IVF partition ("vector
 * column `text-dense` not found in batch": seen with IVF-PQ, IVF-Flat and IVF-HNSW-SQ alike), which
 * would stop compaction and full-text index updates for good; with one partition it updates
 * cleanly (test/index/lancedb-vector-index.test.ts). Measured choices: docs/performance.md, "Search".
 */
export interface VectorIndexSettings {
  /** Rows (the table's, ledger entries included) from which the index is built; 0 never builds one. */
  minRows: number;
  /** HNSW candidates kept while searching the graph (Qdrant's `hnsw_ef`). */
  ef: number;
}

export const DEFAULT_VECTOR_INDEX: VectorIndexSettings = {
  minRows: 50_000,
  ef: 100,
};

/** The index is trained again (replacing the old one) once the table has grown this many times over. */
export const RETRAIN_GROWTH = 4;

const NAME_PREFIX = 'text_dense_idx_';

/**
 * The index's name records the rows it was trained on (`text_dense_idx_<rows>`), so any process
 * can tell when the table has outgrown the partitioning without an extra commit for bookkeeping.
 */
export function vectorIndexName(rows: number): string {
  return `${NAME_PREFIX}${rows}`;
}

/** Whether an index covers `text-dense` (LanceDB lists that column quoted: `` `text-dense` ``). */
export function isDenseIndex(index: IndexConfig): boolean {
  return index.columns.length === 1 && index.columns[0]!.replaceAll('`', '') === DENSE_VECTOR;
}

/** Rows the table's dense index was trained on, or undefined when it has none. */
export function trainedRowsOf(indices: readonly IndexConfig[]): number | undefined {
  const found = indices.find(isDenseIndex);
  if (!found) return undefined;
  const n = Number(found.name.startsWith(NAME_PREFIX) ? found.name.slice(NAME_PREFIX.length) : Number.NaN);
  // An index made by hand (another name) counts as trained on nothing recorded: never retrained.
  return Number.isFinite(n) ? n : Number.POSITIVE_INFINITY;
}

/**
 * Index parameters: one partition (see above), HNSW `m` 16 and `ef_construction` 100 (Qdrant's
 * defaults, cheaper to build than LanceDB's 20 / 300; recall and build times of both in
 * docs/performance.md), cosine distance as every query uses.
 */
export function vectorIndexConfig(): Index {
  return Index.hnswSq({ distanceType: 'cosine', numPartitions: 1, m: 16, efConstruction: 100 });
}

/**
 * Applies the query-time settings; LanceDB ignores them while the table has no index. The tenant
 * filter stays a prefilter (LanceDB's default): the graph search only ever yields the tenant's rows,
 * and a tenant with few rows still gets k of them.
 */
export function tuneVectorQuery(query: VectorQuery, s: VectorIndexSettings): VectorQuery {
  return query.ef(s.ef);
}

/**
 * Builds (or retrains) the dense index when the table calls for it: none yet and at least
 * `minRows` rows, or one trained on a quarter of today's rows or fewer. Returns whether it built.
 */
export async function buildVectorIndexIfDue(
  table: Table,
  s: VectorIndexSettings,
  deps: { log: Logger; now: () => number; onStart?: (() => Promise<void> | void) | undefined },
): Promise<boolean> {
  const { log } = deps;
  if (s.minRows <= 0) return false;
  const indices = await table.listIndices();
  const trained = trainedRowsOf(indices);
  const rows = await table.countRows();
  const due = trained === undefined ? rows >= s.minRows : rows >= trained * RETRAIN_GROWTH;
  if (!due) return false;
  await deps.onStart?.();
  const started = deps.now();
  log.info({ table: table.name, rows, trainedOn: trained }, 'building the dense vector index');
  const name = vectorIndexName(rows);
  await table.createIndex(DENSE_VECTOR, { config: vectorIndexConfig(), name, replace: true });
  // The new index answers queries from its commit on; the old one (another name) is dropped after.
  for (const old of indices) {
    if (isDenseIndex(old) && old.name !== name) await table.dropIndex(old.name);
  }
  log.info({ table: table.name, rows, ms: deps.now() - started }, 'dense vector index built');
  return true;
}
