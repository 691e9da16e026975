import type { Table } from '@lancedb/lancedb';

/**
 * The file_ids a LanceDB table may hold, kept by the process that writes it, so a version of a file
 * the table has never seen skips the presence read (lancedb-presence.ts), which scanned the rows
 * written since the last optimize on LanceDB's threads: about 3.5 ms of a small upload's 10 ms of
 * server CPU (docs/performance-ingestion.md, "Where a small file's time goes").
 *
 * The set is a superset: every file_id of the table as of table version `base` (one scan of the
 * `file_id` column, on the first question), plus every file_id this process has written or
 * journaled since (`note`, before the write). A file_id outside it has no row in the table, so it
 * has no chunk in any collection and no `committed` entry. Any other answer ("maybe") goes to the
 * read as before. Deletes leave ids in it; they only cost that read.
 *
 * Other processes' writes: every commit this process makes records the table version it produced
 * (`committed`). Before answering, the table's current version is read (LanceDB re-checks storage
 * every `readConsistencySeconds`, as every read does); a version in between that is not this
 * process's (another process's commit, or an optimize or index build, which return none) makes the
 * set stale, and the question rescans the column first. So a file another process wrote is seen
 * as soon as a read would have seen it.
 */
export class KnownFiles {
  /** Every file_id of the table as of `base`, and every one noted since. */
  readonly #ids = new Set<string>();
  /** Whether `#ids` holds every file_id of the table at version `#base`. */
  #complete = false;
  #base = 0;
  /** Versions this process's commits produced, above `#base`. */
  readonly #ours = new Set<number>();
  #scanning: Promise<void> | undefined;
  /** A version read not started yet, which questions asked meanwhile share (`#version`). */
  #versionRead: { table: Table; read: Promise<number> } | undefined;
  /** Column scans made (the first and the rescans): what tests and the benches read. */
  scans = 0;

  /** File ids about to be written or journaled (called before the write). */
  note(fileIds: Iterable<unknown>): void {
    for (const id of fileIds) if (typeof id === 'string') this.#ids.add(id);
  }

  /** A table version one of this process's commits produced. */
  committed(version: number | undefined): void {
    if (version !== undefined && version > this.#base) this.#ours.add(version);
  }

  /** Whether the table may hold rows of `fileId`: false only when it certainly holds none. */
  async mayHold(table: Table, fileId: string): Promise<boolean> {
    if (this.#ids.has(fileId)) return true;
    try {
      await this.#current(table);
    } catch {
      // Unknown: the presence read answers (and reports a failure of the table itself).
      return true;
    }
    return this.#ids.has(fileId);
  }

  /**
   * Of `fileIds`, those the table may hold; the others certainly have no row in it. A read filtered
   * on them (the CLI's identity look-up of a pass: every candidate id of every file) asks for fewer
   * ids, or is not made at all.
   */
  async mayHoldOf(table: Table, fileIds: readonly string[]): Promise<readonly string[]> {
    if (fileIds.every((id) => this.#ids.has(id))) return fileIds;
    try {
      await this.#current(table);
    } catch {
      return fileIds;
    }
    return fileIds.filter((id) => this.#ids.has(id));
  }

  /** Brings the set up to the table's current version: rescans when a version is not this process's. */
  async #current(table: Table): Promise<void> {
    if (this.#complete) {
      const now = await this.#version(table);
      let v = this.#base + 1;
      while (v <= now && this.#ours.has(v)) v += 1;
      if (v > now) {
        for (const o of this.#ours) if (o <= now) this.#ours.delete(o);
        this.#base = Math.max(this.#base, now);
        return;
      }
      this.#complete = false;
    }
    this.#scanning ??= this.#scan(table).finally(() => {
      this.#scanning = undefined;
    });
    await this.#scanning;
  }

  /**
   * The table's current version, one read for every question asked before that read starts: a
   * pass asks for each of its files at once (one native call instead of one a file). The read starts
   * after the callers that share it have called, so each sees a version at least as new as at its call.
   */
  #version(table: Table): Promise<number> {
    if (this.#versionRead?.table !== table) {
      const read = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        if (this.#versionRead?.read === read) this.#versionRead = undefined;
        return table.version();
      });
      this.#versionRead = { table, read };
    }
    return this.#versionRead.read;
  }

  async #scan(table: Table): Promise<void> {
    // The version first: the scan reads that version or a later one, so the set covers `base`.
    const base = await table.version();
    this.scans += 1;
    const ids = this.#ids;
    // Batch by batch: the column is never held whole.
    for await (const batch of table.query().select(['file_id'])) {
      const column = batch.getChild('file_id');
      if (!column) continue;
      for (let i = 0; i < column.length; i++) {
        const id: unknown = column.get(i);
        if (typeof id === 'string') ids.add(id);
      }
    }
    for (const o of this.#ours) if (o <= base) this.#ours.delete(o);
    this.#base = base;
    this.#complete = true;
  }
}
