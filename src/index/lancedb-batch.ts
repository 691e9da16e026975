import type { Table } from '@lancedb/lancedb';
import type { Schema } from 'apache-arrow';
import type { KnownFiles } from './lancedb-known.js';
import { type LanceRow, rowsToArrow } from './lancedb-rows.js';
import type { SerialQueue } from './lancedb-writer.js';

/**
 * Group commit for one LanceDB table. Every Lance write is a commit (a new table version, a manifest
 * and a fragment or deletion file), which costs about as much for two rows as for a hundred. Writes
 * that arrive while the table's serial writer is busy wait here and run together as soon as it is
 * free: their deletes become one delete with the predicates OR-ed together, their upserts one
 * merge-insert. Reordering is limited to operations that cannot see each other's rows (see
 * `batches`), so the outcome is that of running them one by one in arrival order, and each
 * caller's promise settles only after the commit holding its rows, so a caller sees exactly what an
 * unbatched call would have given it. Should a merged commit fail, each of its operations is retried
 * on its own, so an error lands on the operation that caused it and never on its neighbours.
 */

export interface WriteOutcome {
  /** Commits this operation is counted for (0 or 1: a merged commit counts once, for its first). */
  commits: number;
  /** Rows written (upsert) or deleted (delete) for this operation. */
  rows: number;
}

interface Waiter {
  resolve(outcome: WriteOutcome): void;
  reject(err: unknown): void;
}

interface UpsertOp extends Waiter {
  kind: 'upsert';
  table: Table;
  schema: Schema;
  rows: LanceRow[];
  exec: { timeoutMs: number };
  /** Every id is new to the table (the caller checked): the rows may be appended, not merged. */
  append: boolean;
}

interface DeleteOp extends Waiter {
  kind: 'delete';
  table: Table;
  where: string;
  /** The one file_id the predicate is confined to; undefined when it may match any file. */
  fileId: string | undefined;
}

type Op = UpsertOp | DeleteOp;

export class WriteBatcher {
  #pending: Op[] = [];
  #scheduled = false;

  constructor(
    private readonly queue: SerialQueue,
    /** Most rows one group commit merges; an operation larger than this runs alone, in one merge. */
    private readonly batchRows: number,
    /** Told every file_id before it is written, and every version a commit produced. */
    private readonly known: KnownFiles,
  ) {}

  /** `append`: every id is new to the table, so the rows may be appended instead of merged by id. */
  upsert(
    table: Table,
    schema: Schema,
    rows: LanceRow[],
    exec: { timeoutMs: number },
    options: { append?: boolean } = {},
  ): Promise<WriteOutcome> {
    const append = options.append === true;
    this.known.note(rows.map((r) => r.file_id));
    return this.#enqueue((w) => ({ kind: 'upsert', table, schema, rows, exec, append, ...w }));
  }

  /** `fileId`: the file_id the predicate requires (lets it run beside upserts of other files). */
  delete(table: Table, where: string, fileId: string | undefined): Promise<WriteOutcome> {
    return this.#enqueue((w) => ({ kind: 'delete', table, where, fileId, ...w }));
  }

  #enqueue(make: (w: Waiter) => Op): Promise<WriteOutcome> {
    return new Promise<WriteOutcome>((resolve, reject) => {
      this.#pending.push(make({ resolve, reject }));
      if (this.#scheduled) return;
      this.#scheduled = true;
      // Whatever arrives while this flush waits for (or runs in) the queue joins the next one.
      void this.queue.run(() => this.#flush());
    });
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    const ops = this.#pending.splice(0);
    for (const batch of batches(ops, this.batchRows)) {
      if (batch.deletes.length > 0) await this.#deletes(batch.deletes);
      if (batch.upserts.length > 0) await this.#upserts(batch.upserts);
    }
  }

  async #upserts(ops: UpsertOp[]): Promise<void> {
    const first = ops[0]!;
    const all = ops.flatMap((o) => o.rows);
    const unique = lastById(all);
    // Appended only when every operation's ids are new (and distinct): else one merge by id for all.
    const append = ops.every((o) => o.append) && unique.length === all.length;
    try {
      this.known.committed(
        await (append ? appendRows : mergeRows)(first.table, first.schema, unique, first.exec),
      );
    } catch (err) {
      if (ops.length === 1 && !append) return first.reject(err);
      // Merge-insert by id is idempotent: replaying each operation alone, merged, is safe (an append
      // that failed after all might have landed).
      return this.#oneByOne(ops.map((o) => ({ ...o, append: false })));
    }
    ops.forEach((o, i) => {
      o.resolve({ commits: i === 0 ? 1 : 0, rows: o.rows.length });
    });
  }

  async #deletes(ops: DeleteOp[]): Promise<void> {
    const first = ops[0]!;
    if (ops.length === 1) {
      try {
        const { numDeletedRows, version } = await first.table.delete(first.where);
        this.known.committed(version);
        first.resolve({ commits: numDeletedRows > 0 ? 1 : 0, rows: numDeletedRows });
      } catch (err) {
        first.reject(err);
      }
      return;
    }
    let counts: number[];
    try {
      counts = await matchCounts(
        first.table,
        ops.map((o) => o.where),
      );
      // Nothing to delete (the usual case for a file ingested the first time): no commit at all.
      if (counts.some((n) => n > 0)) {
        const { version } = await first.table.delete(ops.map((o) => `(${o.where})`).join(' OR '));
        this.known.committed(version);
      }
    } catch {
      return this.#oneByOne(ops);
    }
    const leader = counts.findIndex((n) => n > 0);
    ops.forEach((o, i) => {
      o.resolve({ commits: i === leader ? 1 : 0, rows: counts[i]! });
    });
  }

  async #oneByOne(ops: Op[]): Promise<void> {
    for (const op of ops) {
      if (op.kind === 'upsert') await this.#upserts([op]);
      else await this.#deletes([op]);
    }
  }
}

interface Batch {
  deletes: DeleteOp[];
  upserts: UpsertOp[];
  rows: number;
  /** file_ids the batch's upserts write. */
  files: Set<unknown>;
}

/**
 * Cuts the queued operations, in arrival order, into batches that each run as one delete then one
 * merge-insert. Putting an upsert after the deletes that arrived before it keeps their order; a
 * delete moves ahead of the upserts before it only when it cannot touch their rows (it is confined to
 * a file_id none of them writes), else it starts a new batch. Deletes commute with each other, and
 * upserts of one id stay in arrival order (the merge keeps the last). A batch holds at most
 * `batchRows` upserted rows, unless one upsert alone is larger.
 */
function batches(ops: Op[], batchRows: number): Batch[] {
  const out: Batch[] = [];
  let current: Batch | undefined;
  for (const op of ops) {
    const fits =
      current !== undefined &&
      (op.kind === 'upsert'
        ? current.upserts.length === 0 || current.rows + op.rows.length <= batchRows
        : current.upserts.length === 0 || (op.fileId !== undefined && !current.files.has(op.fileId)));
    if (!fits || current === undefined) {
      current = { deletes: [], upserts: [], rows: 0, files: new Set() };
      out.push(current);
    }
    if (op.kind === 'delete') {
      current.deletes.push(op);
      continue;
    }
    current.upserts.push(op);
    current.rows += op.rows.length;
    for (const row of op.rows) current.files.add(row.file_id);
  }
  return out;
}

/**
 * How many rows each predicate would delete, attributing a row matched by several to the first (as
 * deleting one after another would): one read, each predicate projected as a boolean column.
 */
async function matchCounts(table: Table, predicates: string[]): Promise<number[]> {
  const columns: Record<string, string> = {};
  predicates.forEach((p, i) => {
    columns[`m${i}`] = `coalesce(${p}, false)`;
  });
  const rows: Record<string, unknown>[] = await table
    .query()
    .where(predicates.map((p) => `(${p})`).join(' OR '))
    .select(columns)
    .toArray();
  const counts = predicates.map(() => 0);
  for (const row of rows) {
    const i = predicates.findIndex((_, k) => row[`m${k}`] === true);
    if (i >= 0) counts[i]! += 1;
  }
  return counts;
}

/**
 * One merge-insert, so one commit: a reader sees all of the rows or none. `batches` keeps merged
 * batches under `batchRows`; one operation larger than that still goes in whole, because it is one
 * file's version and must never become visible in parts.
 */
async function mergeRows(
  table: Table,
  schema: Schema,
  rows: LanceRow[],
  exec: { timeoutMs: number },
): Promise<number> {
  const data = rowsToArrow(rows, schema);
  const merged = await table
    .mergeInsert('id')
    .whenMatchedUpdateAll()
    .whenNotMatchedInsertAll()
    .execute(data, exec);
  return merged.version;
}

/** One append, one commit: rows whose ids the table does not hold (the caller checked). */
async function appendRows(table: Table, schema: Schema, rows: LanceRow[]): Promise<number> {
  return (await table.add(rowsToArrow(rows, schema))).version;
}

/** Keeps the last occurrence of each id, so one merge never sees an id twice (Lance rejects that). */
export function lastById<T extends object>(rows: readonly T[]): T[] {
  const byId = new Map<unknown, T>();
  for (const r of rows) {
    const id = (r as { id?: unknown }).id;
    byId.delete(id);
    byId.set(id, r);
  }
  return [...byId.values()];
}
