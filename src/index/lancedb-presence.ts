import type { Table } from '@lancedb/lancedb';
import { filterToSql } from './lancedb-filter.js';

/**
 * "Does this file already have chunks in this collection?" — asked by every `writeVersion` (a file
 * with no other version needs no `writing` entry and nothing retired). One `countRows` per file cost
 * about 25 ms on a small table and far more under load, per file, so questions asked in the same
 * turn of the event loop (the files of one pipeline pass, or concurrent requests) are answered by
 * one read: the `file_id` and `collection_name` columns of the rows of all of them.
 */
interface Question {
  table: Table;
  fileId: string;
  collectionName: string;
  resolve(found: boolean): void;
  reject(err: unknown): void;
}

export class PresenceProbe {
  #pending: Question[] = [];
  #scheduled = false;

  constructor(private readonly exec: { timeoutMs: number }) {}

  /** Whether any row of `fileId` is in `collectionName` (as `count({fileId, collectionNames}) > 0`). */
  has(table: Table, fileId: string, collectionName: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.push({ table, fileId, collectionName, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        void this.#flush(this.#pending.splice(0));
      });
    });
  }

  async #flush(asked: Question[]): Promise<void> {
    // One read per table (one in practice: an index instance writes one table).
    const byTable = new Map<Table, Question[]>();
    for (const a of asked) byTable.set(a.table, [...(byTable.get(a.table) ?? []), a]);
    for (const [table, group] of byTable) {
      try {
        const where = filterToSql({
          fileIds: [...new Set(group.map((g) => g.fileId))],
          collectionNames: [...new Set(group.map((g) => g.collectionName))],
        });
        const found = new Set<string>();
        if (where !== 'false') {
          const rows: unknown[] = await table
            .query()
            .where(where ?? 'true')
            .select(['file_id', 'collection_name'])
            .toArray(this.exec);
          for (const r of rows) {
            const row = r as { file_id?: unknown; collection_name?: unknown };
            found.add(`${String(row.file_id)}\u0000${String(row.collection_name)}`);
          }
        }
        for (const g of group) g.resolve(found.has(`${g.fileId}\u0000${g.collectionName}`));
      } catch (err) {
        for (const g of group) g.reject(err);
      }
    }
  }
}
