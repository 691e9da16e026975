import type { Query, Table, VectorQuery } from '@lancedb/lancedb';
import { DENSE_VECTOR, type IndexFilter, type SearchHit } from './contract.js';
import { filterToSql } from './lancedb-filter.js';
import {
  DENSE_COLUMN,
  type LexicalLayout,
  POINT_COLUMNS,
  plainTerms,
  rowToDenseHit,
  rowToLexicalHit,
} from './lancedb-rows.js';
import { lexicalColumnOf } from './lancedb-schema-check.js';
import { tuneVectorQuery, type VectorIndexSettings } from './lancedb-vector-index.js';
import type { HybridQuery } from './store.js';

/** Bound on the extra rows one lexical query fetches while the full-text index is still empty. */
const MAX_UNINDEXED_FETCH = 20_000;

/** What a search reads of one LanceDB index object (lancedb.ts). */
export interface TableReader {
  name: string;
  denseDim: number | undefined;
  layout: LexicalLayout;
  exec: { timeoutMs: number };
  vectorIndex: VectorIndexSettings;
  /** Whether the table's full-text index holds rows: once true, it stays true. */
  fts: { populated: boolean };
  table(): Promise<Table>;
  /** Whether the table's dense index is the approximate (quantized) one, as last looked up. */
  quantized(table: Table): Promise<boolean>;
}

export async function searchDense(
  r: TableReader,
  vector: number[],
  filter: IndexFilter,
  limit: number,
): Promise<SearchHit[]> {
  if (r.denseDim === undefined) {
    throw new Error(`LanceDB table "${r.name}" is lexical-only: it has no ${DENSE_VECTOR} vector`);
  }
  if (vector.length !== r.denseDim) {
    throw new Error(`query vector has ${vector.length} dimensions, the index expects ${r.denseDim}`);
  }
  const filterSql = filterToSql(filter);
  if (filterSql === 'false' || limit <= 0) return [];
  const table = await r.table();
  // No `text-dense IS NOT NULL` clause: LanceDB skips rows without a vector itself, and the extra
  // predicate cost a scan of the vector column on every query. The filter is a prefilter (LanceDB's
  // default): with a vector index too, only the tenant's rows are ever candidates.
  // Only a quantized index has its candidates re-ranked; asking which index the table has is a
  // metadata look-up, made at most every few seconds, and only when a refine step is configured.
  const quantized = r.vectorIndex.refine > 0 && (await r.quantized(table));
  let query = tuneVectorQuery(table.vectorSearch(vector), r.vectorIndex, limit, quantized)
    .column(DENSE_COLUMN)
    .distanceType('cosine')
    .select([...POINT_COLUMNS, '_distance'])
    .limit(limit);
  if (filterSql !== undefined) query = query.where(filterSql);
  return (await readRows(query, limit, '_distance', r.exec)).map(rowToDenseHit);
}

export async function searchLexical(
  r: TableReader,
  query: HybridQuery,
  filter: IndexFilter,
  limit: number,
): Promise<SearchHit[]> {
  const where = filterToSql(filter);
  if (where === 'false' || limit <= 0) return [];
  const table = await r.table();
  // New tables match the query's analysed terms against the chunks' (each term once: a repeated
  // term would count twice); older ones let LanceDB analyse the raw text over `content`.
  const text =
    r.layout === 'terms' ? [...new Set(query.terms ?? plainTerms(query.text))].join(' ') : query.text.trim();
  if (text === '') return [];
  // LanceDB (0.37.1) scores the rows not yet in the full-text index (written since the last
  // optimize) by brute force and ranks them with the indexed ones, except while the index holds no
  // row at all (a new table before its first optimize): then it returns matches in table order,
  // cut at the limit, so only then are they all fetched and ranked here. Once the index holds rows
  // (optimize only ever adds them) this takes no look-up: one query per search.
  const pending = r.fts.populated ? 0 : await unindexedWhileEmpty(r, table);
  let q = table
    .query()
    .fullTextSearch(text, { columns: lexicalColumnOf(r.layout) })
    .select([...POINT_COLUMNS, '_score'])
    .limit(limit + pending);
  if (where !== undefined) q = q.where(where);
  const hits = (await readRows(q, limit + pending, '_score', r.exec)).map(rowToLexicalHit);
  return pending === 0 ? hits : hits.sort((a, b) => b.score - a.score).slice(0, limit);
}

/**
 * The rows of a search, read straight from LanceDB's Arrow batches (`id`, `content`, `meta` and the
 * score column; each value decoded once, no row proxies). A search asks for at most `limit` rows,
 * so once that many have come the stream holds no more: it is not polled again. `toArray()` polls
 * it until it says so, one more round trip to LanceDB's threads per search (≈ 0.3 ms at c=1 under
 * load, docs/performance.md). `execute` is LanceDB's own streaming read (0.37: declared protected,
 * though `toArrow` is built on it); it keeps the query's time-out, which the public async iterator
 * does not take.
 */
async function readRows(
  query: VectorQuery | Query,
  limit: number,
  score: '_distance' | '_score',
  exec: { timeoutMs: number },
): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  // biome-ignore lint/complexity/useLiteralKeys: `execute` is protected in LanceDB's typings (see above)
  for await (const batch of query['execute'](exec)) {
    const id = batch.getChild('id');
    const content = batch.getChild('content');
    const meta = batch.getChild('meta');
    const scores = batch.getChild(score);
    for (let i = 0; i < batch.numRows; i++) {
      rows.push({ id: id?.get(i), content: content?.get(i), meta: meta?.get(i), [score]: scores?.get(i) });
    }
    if (rows.length >= limit) break;
  }
  return rows;
}

/** Rows outside the full-text index while it holds none (0 once it holds some, from then on). */
async function unindexedWhileEmpty(r: TableReader, table: Table): Promise<number> {
  const column = lexicalColumnOf(r.layout);
  const fts = (await table.listIndices()).find((i) => i.columns.join(',') === column);
  if (!fts) return 0;
  const stats = await table.indexStats(fts.name);
  if ((stats?.numIndexedRows ?? 0) > 0) {
    r.fts.populated = true;
    return 0;
  }
  return Math.min(stats?.numUnindexedRows ?? 0, MAX_UNINDEXED_FETCH);
}
