import type { Table } from '@lancedb/lancedb';
import type { IndexFilter } from './contract.js';
import { afterKeySql, andSql, decodeCursor, encodeCursor, filterToSql, sqlString } from './lancedb-filter.js';
import { META_COLUMNS, POINT_COLUMNS, rowToMetaPoint, rowToPoint } from './lancedb-rows.js';
import { RESERVED_TENANT_VALUES } from './reserved.js';
import type { ScrollOptions, ScrollPage, TenantCount } from './store.js';

/** Reads of the LanceDB adapter that walk the table rather than rank it: tenants, scroll pages. */

/** One column scan of the chunks' tenant key (the embedded index is one machine's corpus). */
export async function tenantCounts(
  table: Table,
  limit: number,
  exec: { timeoutMs: number },
): Promise<TenantCount[]> {
  const reserved = RESERVED_TENANT_VALUES.map(sqlString).join(', ');
  const rows: unknown[] = await table
    .query()
    .where(`collection_name NOT IN (${reserved})`)
    .select(['collection_name'])
    .toArray(exec);
  const counts = new Map<string, number>();
  for (const r of rows) {
    const name = (r as { collection_name?: unknown }).collection_name;
    if (typeof name === 'string') counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts]
    .map(([name, chunks]) => ({ name, chunks }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, limit);
}

/** A page of points in (file_id, split_id, id) order after the cursor; the table is opened only when there is something to read. */
export async function scrollPage(
  table: () => Promise<Table>,
  filter: IndexFilter,
  options: ScrollOptions,
  exec: { timeoutMs: number },
): Promise<ScrollPage> {
  const after = options.cursor === undefined ? undefined : afterKeySql(decodeCursor(options.cursor));
  const where = andSql(filterToSql(filter), after);
  if (where === 'false' || options.limit <= 0) return { points: [] };
  let query = (await table())
    .query()
    .select([...(options.metaOnly ? META_COLUMNS : POINT_COLUMNS), 'file_id', 'split_id'])
    .orderBy([{ columnName: 'file_id' }, { columnName: 'split_id' }, { columnName: 'id' }])
    // One extra row tells whether another page exists without a second round trip.
    .limit(options.limit + 1);
  if (where !== undefined) query = query.where(where);
  const rows: unknown[] = await query.toArray(exec);
  const points = rows.slice(0, options.limit).map(options.metaOnly ? rowToMetaPoint : rowToPoint);
  const last = points.at(-1);
  if (rows.length <= options.limit || !last) return { points };
  return {
    points,
    next: encodeCursor({ fileId: last.meta.file_id, splitId: last.meta.split_id, id: last.id }),
  };
}
