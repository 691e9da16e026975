import type { Table } from '@lancedb/lancedb';
import type { IndexFilter } from './contract.js';
import { filterToSql, sqlString } from './lancedb-filter.js';
import type { TableMaintenance } from './lancedb-maintenance.js';
import { type LexicalLayout, lanceSchema, movedRow } from './lancedb-rows.js';
import type { TableWriter } from './lancedb-writer.js';
import { RESERVED_TENANTS } from './reserved.js';

/** `moveTo` of the LanceDB adapter (lancedb.ts): points to another tenant, in one commit. */

/** Every file_id the filters confine an operation to; undefined when one of them names none. */
export function filesOf(filters: readonly IndexFilter[]): string[] | undefined {
  const files: string[] = [];
  for (const f of filters) {
    if (f.fileId === undefined && f.fileIds === undefined) return undefined;
    if (f.fileId !== undefined) files.push(f.fileId);
    else files.push(...(f.fileIds ?? []));
  }
  return files;
}

/**
 * One SQL predicate for the rows any of the filters matches: 'false' when none can match anything,
 * 'true' when one matches every row.
 */
export function whereAny(filters: readonly IndexFilter[]): string {
  const predicates = filters.map((f) => filterToSql(f) ?? 'true').filter((p) => p !== 'false');
  if (predicates.length === 0) return 'false';
  if (predicates.includes('true')) return 'true';
  return predicates.length === 1 ? predicates[0]! : predicates.map((p) => `(${p})`).join(' OR ');
}

export interface MoveContext {
  writer: TableWriter;
  maintenance: TableMaintenance;
  exec: { timeoutMs: number };
  denseDim: number | undefined;
  layout: LexicalLayout;
}

/**
 * Out of the staging tenant (a version being published, src/versions/write.ts) every row's meta
 * names that tenant, so one update of the `collection_name` column and the `meta` JSON moves them.
 * Any other move reads the matching rows whole (vectors and lexical terms included) and merges them
 * back under the new tenant: one merge-insert by id. Either way one commit moves them all.
 */
export async function moveRows(
  c: MoveContext,
  table: Table,
  filters: readonly IndexFilter[],
  collectionName: string,
): Promise<number> {
  if (filters.some((f) => filterToSql(f) === undefined)) {
    throw new Error('refusing to move every point: moveTo needs a filter');
  }
  const where = whereAny(filters);
  if (where === 'false') return 0;
  if (filters.every((f) => f.reserved === 'staging' && f.fileId !== undefined)) {
    const from = `"collection_name":${JSON.stringify(RESERVED_TENANTS.staging)}`;
    const to = `"collection_name":${JSON.stringify(collectionName)}`;
    const result = await c.writer.queue.run(() =>
      table.update({
        where,
        valuesSql: {
          collection_name: sqlString(collectionName),
          meta: `replace(meta, ${sqlString(from)}, ${sqlString(to)})`,
        },
      }),
    );
    c.writer.known.committed(result.version);
    c.maintenance.wrote(table, { commits: 1, rows: result.rowsUpdated });
    return result.rowsUpdated;
  }
  const raw: unknown[] = await table.query().where(where).toArray(c.exec);
  if (raw.length === 0) return 0;
  const rows = raw.map((r) => movedRow(r, collectionName));
  const schema = lanceSchema(c.denseDim, c.layout);
  const outcome = await c.writer.batcher.upsert(table, schema, rows, c.exec);
  c.maintenance.wrote(table, outcome);
  return rows.length;
}
