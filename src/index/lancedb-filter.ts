import { z } from 'zod';
import { checkFilterInstant, type IndexFilter } from './contract.js';
import { publicTenants, RESERVED_TENANT_VALUES, RESERVED_TENANTS } from './reserved.js';

/**
 * Typed filters → LanceDB (DataFusion) SQL predicates. Every value is a quoted literal built here;
 * nothing from a caller reaches the SQL text unescaped.
 */

/**
 * A SQL string literal: single quotes, embedded quotes doubled (DataFusion treats backslashes
 * literally). Control characters, NUL included, pass through as they are: DataFusion compares them
 * like any other character, so rows an older version wrote with such identifiers stay deletable.
 */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

function sqlInteger(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
  return String(value);
}

function sqlList(values: readonly string[]): string {
  return `[${values.map(sqlString).join(', ')}]`;
}

/**
 * `source` and `created_at` have no column of their own: they are read from the `meta` JSON text
 * (`JSON.stringify` of the chunk's meta, written by Kilde only). A string inside a JSON value has its
 * quotes escaped, so `"source":"` and `"created_at":"` can only occur as keys: the match is exact.
 * LanceDB (0.37) offers no JSON function over a text column; `strpos` and `regexp_match` are plain
 * DataFusion functions evaluated in the query's filter, before the limit (never post-filtering).
 *
 * A prefix of `meta.source` is a prefix of its JSON form: `JSON.stringify` escapes character by
 * character (a prefix with a lone surrogate, the one exception, is refused before it gets here).
 * `strpos` takes its argument literally: no wildcard of LIKE or regex applies.
 */
function sourcePrefixSql(prefix: string): string {
  if (/\p{Cs}/u.test(prefix)) throw new Error('source prefix is not well-formed Unicode');
  const json = JSON.stringify(prefix).slice(0, -1);
  return `strpos(meta, ${sqlString(`"source":${json}`)}) > 0`;
}

/** `meta.created_at` as text (toISOString: compares as it sorts), or null when the chunk has none. */
const CREATED_AT_SQL = `(regexp_match(meta, '"created_at":"([0-9T:.Z+-]+)"'))[1]`;

/** The predicate of a filter; undefined when it matches everything. */
export function filterToSql(filter: IndexFilter): string | undefined {
  const parts: string[] = [];
  if (filter.reserved !== undefined) {
    parts.push(`collection_name = ${sqlString(RESERVED_TENANTS[filter.reserved])}`);
  }
  if (filter.collectionNames !== undefined) {
    const names = publicTenants(filter.collectionNames);
    // An empty tenant set must match nothing, never everything.
    if (names.length === 0) return 'false';
    parts.push(`collection_name IN (${names.map(sqlString).join(', ')})`);
  }
  if (filter.chunksOnly) {
    parts.push(`collection_name NOT IN (${RESERVED_TENANT_VALUES.map(sqlString).join(', ')})`);
  }
  if (filter.fileId !== undefined) parts.push(`file_id = ${sqlString(filter.fileId)}`);
  if (filter.ingestVersion !== undefined) parts.push(`ingest_version = ${sqlString(filter.ingestVersion)}`);
  if (filter.notIngestVersion !== undefined) {
    parts.push(`(ingest_version IS NULL OR ingest_version <> ${sqlString(filter.notIngestVersion)})`);
  }
  if (filter.splitId !== undefined) parts.push(`split_id = ${sqlInteger(filter.splitId)}`);
  if (filter.languages !== undefined) {
    if (filter.languages.length === 0) return 'false';
    parts.push(`array_has_any(languages, ${sqlList(filter.languages)})`);
  }
  if (filter.fileIds !== undefined) {
    if (filter.fileIds.length === 0) return 'false';
    parts.push(`file_id IN (${filter.fileIds.map(sqlString).join(', ')})`);
  }
  if (filter.collectionTypes !== undefined) {
    if (filter.collectionTypes.length === 0) return 'false';
    parts.push(`collection_type IN (${filter.collectionTypes.map(sqlString).join(', ')})`);
  }
  if (filter.sourcePrefix !== undefined) parts.push(sourcePrefixSql(filter.sourcePrefix));
  if (filter.createdAfter !== undefined) {
    parts.push(`${CREATED_AT_SQL} > ${sqlString(checkFilterInstant(filter.createdAfter))}`);
  }
  if (filter.createdBefore !== undefined) {
    parts.push(`${CREATED_AT_SQL} < ${sqlString(checkFilterInstant(filter.createdBefore))}`);
  }
  return parts.length === 0 ? undefined : parts.join(' AND ');
}

/** Position after the last point of a scroll page, in (file_id, split_id, id) order. */
export interface ScrollKey {
  fileId: string;
  splitId: number;
  id: string;
}

const cursorSchema = z.tuple([z.string(), z.number().int(), z.string()]);

export function encodeCursor(key: ScrollKey): string {
  return Buffer.from(JSON.stringify([key.fileId, key.splitId, key.id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): ScrollKey {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new Error('invalid scroll cursor');
  }
  const parsed = cursorSchema.safeParse(raw);
  if (!parsed.success) throw new Error('invalid scroll cursor');
  const [fileId, splitId, id] = parsed.data;
  return { fileId, splitId, id };
}

/** Keyset predicate: rows strictly after `key` in (file_id, split_id, id) order. */
export function afterKeySql(key: ScrollKey): string {
  const f = sqlString(key.fileId);
  const s = sqlInteger(key.splitId);
  const i = sqlString(key.id);
  return `(file_id > ${f} OR (file_id = ${f} AND (split_id > ${s} OR (split_id = ${s} AND id > ${i}))))`;
}

/** AND of the given predicates, skipping absent ones. */
export function andSql(...predicates: (string | undefined)[]): string | undefined {
  const present = predicates.filter((p): p is string => p !== undefined);
  if (present.length === 0) return undefined;
  return present.length === 1 ? present[0] : present.map((p) => `(${p})`).join(' AND ');
}
