import type { Table } from '@lancedb/lancedb';
import { sqlString } from './lancedb-filter.js';
import { RESERVED_TENANTS } from './reserved.js';

/**
 * "What does this file already have in this collection?" (`PointStore.presence`) — asked by every
 * version the protocol writes (src/versions/write.ts): a file
 * with no other version needs no `writing` entry and nothing retired, and one with no row at all
 * there (no chunk, no `committed` ledger entry) may be appended instead of merged by id. One
 * `countRows` per file cost about 25 ms on a small table and far more under load, per file, so
 * questions asked in the same turn of the event loop (the files of one pipeline pass, or concurrent
 * requests) are answered by one read: the `file_id`, `collection_name` and `id` columns of the rows
 * of all of them (their chunks, and the `committed` entries among their ledger entries). One read
 * runs at a time: questions asked while it runs wait for it and go together in the next, so
 * concurrent requests, which rarely ask in the same turn, still share reads (each read scans the
 * rows written since the last optimize: one per file cost 846 reads of ≈16 ms for 1000 uploads at
 * 8 in flight).
 */
export interface Presence {
  /** Whether any row of the file is in the collection (as `count({fileId, collectionNames}) > 0`). */
  chunks: boolean;
  /** Whether the file's `committed` ledger entry for the collection (its fixed id) exists. */
  committed: boolean;
}

interface Question {
  table: Table;
  fileId: string;
  collectionName: string;
  /** The id of the file's `committed` entry for the collection (the version ledger's fixed id). */
  committedId: string;
  resolve(found: Presence): void;
  reject(err: unknown): void;
}

export class PresenceProbe {
  #pending: Question[] = [];
  /** A read is scheduled or running: new questions wait for the next one. */
  #busy = false;

  constructor(private readonly exec: { timeoutMs: number }) {}

  has(table: Table, fileId: string, collectionName: string, committedId: string): Promise<Presence> {
    return new Promise<Presence>((resolve, reject) => {
      this.#pending.push({ table, fileId, collectionName, committedId, resolve, reject });
      if (!this.#busy) this.#next();
    });
  }

  /** The next read, a turn of the event loop from now (the rest of this turn's questions join it). */
  #next(): void {
    this.#busy = true;
    setImmediate(() => {
      void this.#flush(this.#pending.splice(0)).finally(() => {
        if (this.#pending.length > 0) this.#next();
        else this.#busy = false;
      });
    });
  }

  async #flush(asked: Question[]): Promise<void> {
    // One read per table (one in practice: an index instance writes one table).
    const byTable = new Map<Table, Question[]>();
    for (const a of asked) byTable.set(a.table, [...(byTable.get(a.table) ?? []), a]);
    for (const [table, group] of byTable) {
      try {
        const list = (values: Iterable<string>) => [...new Set(values)].map(sqlString).join(', ');
        // Two indexed columns AND-ed (btree, bitmap): answered from the indexes, where an OR of an
        // id list cost a scan of every row (≈5 ms a question at a thousand files). Rows of other
        // files' committed entries and other collections are sorted out below.
        const where =
          `file_id IN (${list(group.map((g) => g.fileId))}) AND ` +
          `collection_name IN (${list([...group.map((g) => g.collectionName), RESERVED_TENANTS.committed])})`;
        const rows: unknown[] = await table
          .query()
          .where(where)
          .select(['file_id', 'collection_name', 'id'])
          .toArray(this.exec);
        const found = new Set<string>();
        const ids = new Set<string>();
        for (const r of rows) {
          const row = r as { file_id?: unknown; collection_name?: unknown; id?: unknown };
          if (row.collection_name === RESERVED_TENANTS.committed) ids.add(String(row.id));
          else found.add(`${String(row.file_id)}\u0000${String(row.collection_name)}`);
        }
        for (const g of group) {
          g.resolve({
            chunks: found.has(`${g.fileId}\u0000${g.collectionName}`),
            committed: ids.has(g.committedId),
          });
        }
      } catch (err) {
        for (const g of group) g.reject(err);
      }
    }
  }
}
