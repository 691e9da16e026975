import { type Connection, Index, type Table } from '@lancedb/lancedb';
import type { Logger } from 'pino';
import { DENSE_VECTOR } from './contract.js';
import {
  DENSE_COLUMN,
  denseSizeOf,
  LEGACY_DENSE_COLUMN,
  LEXICAL_COLUMN,
  type LexicalLayout,
  lanceSchema,
  lexicalLayoutOf,
  REQUIRED_COLUMNS,
} from './lancedb-rows.js';

export type FtsLanguage = 'english' | 'danish';

/**
 * Full-text index options: stemmed in the corpus language; English stop words removed, Danish ones
 * kept. Measured with `npm run bench:quality` on the Danish textbook (180 questions), removing the
 * Danish list lost 5 top-1 hits and won none (42.8 % against 45.6 %), in the same direction at
 * chunk sizes 200 and 800; BM25's IDF already weighs those words down. On SciFact the English
 * list is neutral (nDCG@10 0.686 with, 0.684 without), so English keeps it.
 */
export function ftsIndex(language: FtsLanguage): Index {
  return Index.fts({
    language: language === 'danish' ? 'Danish' : 'English',
    stem: true,
    removeStopWords: language !== 'danish',
    lowercase: true,
    // Folding would turn Danish æ/ø/å into a/o/ae before matching and merge distinct words (får/far).
    asciiFolding: language !== 'danish',
    // Kilde issues match queries only, never phrase queries; positions would only grow the index.
    withPosition: false,
  });
}

/**
 * The full-text index of the `lexical` column: its terms are analysed already (Kilde's BM25
 * analysis, per document language: src/embed/bm25/analysis.ts), so LanceDB only splits on spaces.
 */
export function termsIndex(): Index {
  return Index.fts({
    baseTokenizer: 'whitespace',
    stem: false,
    removeStopWords: false,
    lowercase: false,
    asciiFolding: false,
    // fastembed drops tokens over 40 code points; a UTF-8 byte limit must let those through.
    maxTokenLength: 256,
    withPosition: false,
  });
}

/** Field metadata of `lexical`: every SPARSE_LANGUAGE documents without a detected language were analysed in. */
export const FALLBACKS_KEY = 'kilde.fallback_languages';

/** The fallback languages recorded on a table's `lexical` column (empty for tables without one). */
export async function fallbackLanguages(table: Table): Promise<string[]> {
  const field = (await table.schema()).fields.find((f) => f.name === LEXICAL_COLUMN);
  const value = field?.metadata.get(FALLBACKS_KEY);
  return value ? value.split(',').filter(Boolean) : [];
}

/** Scalar indexes that keep filtered reads and merge-by-id fast as the table grows. */
const SCALAR_INDEXES: readonly [string, () => Index][] = [
  ['id', () => Index.btree()],
  ['collection_name', () => Index.bitmap()],
  ['file_id', () => Index.btree()],
  ['languages', () => Index.labelList()],
];

/**
 * The index Kilde makes on `column` of a table with the `terms` layout (`ensureIndexes`), to build
 * it again from scratch; undefined for any other (the older `content` full-text index, whose
 * language the table records only in the index itself, and the dense vector index).
 */
export function standardIndex(column: string): (() => Index) | undefined {
  if (column === LEXICAL_COLUMN) return termsIndex;
  return SCALAR_INDEXES.find(([c]) => c === column)?.[1];
}

/**
 * Renames the dense column of a table an earlier Kilde wrote (`text-dense` → `text_dense`, a change
 * of the schema only: rows and the vector index are kept; see `DENSE_COLUMN`). Two processes opening
 * such a table at once may both try; the one that loses finds the new name.
 */
export async function useDenseColumn(table: Table, log: Logger): Promise<void> {
  const names = async () => new Set((await table.schema()).fields.map((f) => f.name));
  if (!(await names()).has(LEGACY_DENSE_COLUMN)) return;
  try {
    await table.alterColumns([{ path: LEGACY_DENSE_COLUMN, rename: DENSE_COLUMN }]);
    log.info({ table: table.name, from: LEGACY_DENSE_COLUMN, to: DENSE_COLUMN }, 'renamed the dense column');
  } catch (err) {
    await table.checkoutLatest();
    if ((await names()).has(DENSE_COLUMN)) return;
    throw new Error(
      `LanceDB table "${table.name}" stores its dense vector as ${LEGACY_DENSE_COLUMN}, which LanceDB cannot optimize once its index has grown, and renaming it to ${DENSE_COLUMN} failed: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/** Opens the table, creating it (race-safe) when missing; fails loudly on an incompatible layout. */
export async function openOrCreateTable(
  db: Connection,
  name: string,
  denseDim: number | undefined,
  where: string,
  log: Logger,
): Promise<Table> {
  const existing = (await db.tableNames()).includes(name);
  const table = existing
    ? await db.openTable(name)
    : await db.createEmptyTable(name, lanceSchema(denseDim), { existOk: true });
  if (existing) await useDenseColumn(table, log);
  const schema = await table.schema();
  const names = new Set(schema.fields.map((f) => f.name));
  const missing = REQUIRED_COLUMNS.filter((c) => !names.has(c));
  if (missing.length > 0) {
    throw new Error(`LanceDB table "${name}" in ${where} lacks the columns ${missing.join(', ')}`);
  }
  const actual = denseSizeOf(schema);
  if (denseDim !== undefined && actual !== denseDim) {
    throw new Error(
      actual === undefined
        ? `LanceDB table "${name}" in ${where} has no ${DENSE_VECTOR} vector (lexical-only), but EMBEDDING_DIM is ${denseDim}; use another VECTORDB_INDEX or re-ingest`
        : `LanceDB table "${name}" in ${where} has ${DENSE_VECTOR} of size ${actual}, but EMBEDDING_DIM is ${denseDim}`,
    );
  }
  return table;
}

/**
 * Creates the full-text and scalar indexes that are missing; never replaces an existing one. Reports
 * what a language setting cannot change: a table made before the `lexical` column keeps the
 * language its full-text index was built with, and a changed SPARSE_LANGUAGE applies to documents
 * ingested from now on (it is recorded, so queries still try the earlier one).
 */
export async function ensureIndexes(table: Table, language: FtsLanguage, log: Logger): Promise<void> {
  const indices = await table.listIndices();
  const byColumn = new Map(indices.map((i) => [i.columns.join(','), i]));
  const layout = lexicalLayoutOf(await table.schema());
  if (layout === 'terms') {
    if (!byColumn.has(LEXICAL_COLUMN)) await createIfAbsent(table, LEXICAL_COLUMN, termsIndex());
    await recordFallback(table, language, log);
  } else {
    log.warn(
      { table: table.name },
      'this LanceDB table predates per-document lexical analysis: its full-text index stems every document in one language and leaves titles and headings out; ingest into a new table (VECTORDB_INDEX) to use them',
    );
    const fts = byColumn.get('content');
    if (!fts) {
      await createIfAbsent(table, 'content', ftsIndex(language));
    } else {
      const details: unknown = fts.indexDetails;
      const existing =
        typeof details === 'object' && details !== null && 'language' in details
          ? details.language
          : undefined;
      if (typeof existing === 'string' && existing.toLowerCase() !== language) {
        log.warn(
          { table: table.name, indexLanguage: existing, configured: language },
          'full-text index was built for another language; keeping it (drop the table to rebuild)',
        );
      }
    }
  }
  for (const [column, make] of SCALAR_INDEXES) {
    if (!byColumn.has(column)) await createIfAbsent(table, column, make());
  }
}

async function recordFallback(table: Table, language: FtsLanguage, log: Logger): Promise<void> {
  const known = await fallbackLanguages(table);
  if (known.includes(language)) return;
  if (known.length > 0) {
    log.warn(
      { table: table.name, before: known, configured: language },
      `SPARSE_LANGUAGE is now ${language}: documents already indexed keep the language they were analysed in (${known.join(', ')} where none was detected) until re-ingested; searches try both`,
    );
  }
  await table.updateFieldMetadata([
    { path: LEXICAL_COLUMN, metadata: { [FALLBACKS_KEY]: [...known, language].join(',') } },
  ]);
}

async function createIfAbsent(table: Table, column: string, config: Index): Promise<void> {
  try {
    await table.createIndex(column, { config, replace: false });
  } catch (err) {
    // Another process may have created it between our listIndices() and now.
    const again = await table.listIndices();
    if (!again.some((i) => i.columns.join(',') === column)) throw err;
  }
}

/** Whether the table carries the full-text index its lexical side needs (`lexical`, or `content` on older tables). */
export async function hasFtsIndex(table: Table): Promise<boolean> {
  const column = lexicalColumnOf(lexicalLayoutOf(await table.schema()));
  const indices = await table.listIndices();
  return indices.some((i) => i.indexType.toUpperCase().includes('FTS') && i.columns.join(',') === column);
}

/** The column a layout's full-text index covers. */
export function lexicalColumnOf(layout: LexicalLayout): string {
  return layout === 'terms' ? LEXICAL_COLUMN : 'content';
}
