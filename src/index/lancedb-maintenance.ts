import type { Index, Table } from '@lancedb/lancedb';
import type { Logger } from 'pino';
import { systemClock } from '../clock.js';
import type { LanceIndexOptions } from './lancedb-options.js';
import { standardIndex } from './lancedb-schema-check.js';
import { buildVectorIndexIfDue, type VectorIndexSettings } from './lancedb-vector-index.js';
import type { TableWriter } from './lancedb-writer.js';

export interface MaintenanceContext {
  writer: TableWriter;
  name: string;
  log: Logger;
  options: LanceIndexOptions;
  denseDim: number | undefined;
  vectorIndex: VectorIndexSettings;
  /** The bound of the process's LanceDB index cache (`LANCEDB_INDEX_CACHE_MB`), to warn of an index that outgrows it. */
  indexCacheMb: number;
  /** How old a table version must be for optimize to remove it (`keepVersionsMs`, lancedb-options.ts). */
  keepVersionsMs: number;
  closed(): boolean;
}

/**
 * A table's upkeep behind its writes: a background `optimize()` (compaction, full-text index
 * refresh, cleanup of old versions) after enough commits or rows, spaced so it takes a small share
 * of the writer's time, then the dense vector index build when one is due (lancedb-vector-index.ts).
 * State lives on the process-wide `TableWriter`, shared by every index object over the table.
 */
export class TableMaintenance {
  constructor(private readonly c: MaintenanceContext) {}

  /** Counts commits and rows; after enough of either, queues one optimize behind the writes. */
  wrote(table: Table, outcome: { commits: number; rows: number }): void {
    const w = this.c.writer;
    w.writesSinceOptimize += outcome.commits;
    w.rowsSinceOptimize += outcome.rows;
    const due =
      w.writesSinceOptimize >= (this.c.options.optimizeEvery ?? 20) ||
      w.rowsSinceOptimize >= (this.c.options.optimizeRows ?? 10_000);
    // Compaction rewrites the fragments a vector index build reads: it waits for the build to end
    // (which calls this again), while writes go on meanwhile.
    if (w.optimizeQueued || w.deferred || w.vectorBuild || !due) return;
    const clock = this.c.options.clock ?? systemClock;
    const wait = w.lastOptimizeEnd + (this.c.options.optimizeSpacing ?? 4) * w.lastOptimizeMs - clock.now();
    if (wait > 0) {
      // Run it once the spacing has passed, even if no further write comes to trigger it. A wait
      // beyond the timer's range fires early and re-arms for the rest (the clock clamps it).
      w.deferred = clock.schedule(() => {
        w.deferred = undefined;
        this.wrote(table, { commits: 0, rows: 0 });
      }, wait);
      return;
    }
    w.optimizeQueued = true;
    void w.queue
      .run(() => this.optimize(table))
      .catch((err: unknown) => this.c.log.warn({ err, table: this.c.name }, 'lancedb optimize failed'));
  }

  /**
   * Brings the upkeep up to date now, for a process about to exit after a run of writes (the local
   * `kilde ingest`): a deferred optimize would die with the process and leave the rows written since
   * the last one outside the full-text and vector indexes (searched exactly, so correct but slow)
   * until some later writer's optimize. Waits for the writes and any build in flight, runs one
   * optimize when rows were written since the last (on a fresh table, builds its indexes instead:
   * `freshIndexes`), then the vector index build when one is due. Returns whether it did either.
   */
  async settle(table: Table): Promise<boolean> {
    const w = this.c.writer;
    w.deferred?.cancel();
    w.deferred = undefined;
    await w.vectorBuild;
    await w.queue.idle();
    const pending = w.writesSinceOptimize > 0 || w.rowsSinceOptimize > 0;
    if (pending) {
      await w.queue.run(async () => this.optimize(table, await freshIndexes(table)));
    } else this.indexVectors(table);
    await w.vectorBuild;
    return pending;
  }

  /**
   * One optimize (on the write queue), then a vector index build if one has come due. Given the
   * indexes of a fresh table (`freshIndexes`), builds them instead, all at once.
   */
  private async optimize(table: Table, fresh?: FreshIndex[]): Promise<void> {
    const w = this.c.writer;
    w.writesSinceOptimize = 0;
    w.rowsSinceOptimize = 0;
    w.optimizeQueued = false;
    const clock = this.c.options.clock ?? systemClock;
    const started = clock.now();
    const olderThan = new Date(started - this.c.keepVersionsMs);
    try {
      if (!(fresh && (await this.build(table, fresh)))) {
        const stats = await table.optimize({ cleanupOlderThan: olderThan });
        this.c.log.debug({ table: this.c.name, stats, ms: clock.now() - started }, 'lancedb table optimized');
      }
    } finally {
      w.lastOptimizeEnd = clock.now();
      w.lastOptimizeMs = w.lastOptimizeEnd - started;
    }
    // Outside the queue: training takes minutes at a million rows, and writes must not wait.
    this.indexVectors(table);
  }

  /**
   * Builds a fresh table's indexes from its rows, all at once (concurrent index commits on one
   * table: Lance rebases one on the other). Whether all were built; when one was not, the optimize
   * that follows folds the rows into it.
   */
  private async build(table: Table, fresh: FreshIndex[]): Promise<boolean> {
    const clock = this.c.options.clock ?? systemClock;
    const started = clock.now();
    const outcomes = await Promise.allSettled(
      fresh.map((i) => table.createIndex(i.column, { config: i.make(), name: i.name, replace: true })),
    );
    const failed = outcomes.flatMap((o, k) =>
      o.status === 'rejected' ? [{ index: fresh[k]!.name, error: String(o.reason) }] : [],
    );
    if (failed.length > 0) {
      this.c.log.warn({ table: this.c.name, failed }, 'lancedb index build failed; optimizing instead');
      return false;
    }
    this.c.log.debug(
      { table: this.c.name, indexes: fresh.map((i) => i.name), ms: clock.now() - started },
      'lancedb indexes built',
    );
    return true;
  }

  /**
   * Starts a background build of the dense vector index when one is due (see
   * lancedb-vector-index.ts); one at a time per table in this process. Writes keep flowing through
   * the queue meanwhile; the rows they add are searched exactly until the next optimize folds them
   * into the index.
   */
  private indexVectors(table: Table): void {
    const w = this.c.writer;
    if (this.c.denseDim === undefined || w.vectorBuild) return;
    const clock = this.c.options.clock ?? systemClock;
    w.vectorBuild = buildVectorIndexIfDue(table, this.c.vectorIndex, {
      log: this.c.log,
      now: () => clock.now(),
      cache: { dim: this.c.denseDim, indexCacheMb: this.c.indexCacheMb },
      onStart: this.c.options.onVectorIndexBuild,
    })
      .then(() => undefined)
      .catch((err: unknown) =>
        this.c.log.warn({ err, table: this.c.name }, 'lancedb vector index build failed'),
      )
      .finally(() => {
        w.vectorBuild = undefined;
        // An optimize that came due during the build runs now.
        if (!this.c.closed()) this.wrote(table, { commits: 0, rows: 0 });
      });
  }
}

/** An index of a fresh table to build again from scratch, under its own name. */
interface FreshIndex {
  name: string;
  column: string;
  make: () => Index;
}

/**
 * The most fragments a fresh table's settle leaves uncompacted. Searches over the 3 fragments of a
 * 1000-file CLI run cost within 0–4 % of the CPU they cost over one, over 16 fragments 16–20 % more
 * (docs/performance-ingestion.md, "The settle").
 */
export const FRESH_BUILD_MAX_FRAGMENTS = 8;

/**
 * The indexes of a table none of whose indexes holds a row yet (a new table before its first
 * optimize: the local `kilde ingest`'s first run into an index), when every one is an index
 * Kilde can make again (`standardIndex`; no vector index) and the table has at most
 * `FRESH_BUILD_MAX_FRAGMENTS` fragments; else undefined (optimize). Building them from the table's
 * rows costs about half an optimize, which also rewrites every fragment into one and prunes old
 * versions: those wait for the next optimize.
 */
async function freshIndexes(table: Table): Promise<FreshIndex[] | undefined> {
  const found: FreshIndex[] = [];
  for (const i of await table.listIndices()) {
    const column = i.columns.join(',');
    const make = standardIndex(column);
    if (!make) return undefined;
    const stats = await table.indexStats(i.name);
    if (stats === undefined || stats.numIndexedRows > 0) return undefined;
    found.push({ name: i.name, column, make });
  }
  if (found.length === 0) return undefined;
  const { fragmentStats } = await table.stats();
  return fragmentStats.numFragments <= FRESH_BUILD_MAX_FRAGMENTS ? found : undefined;
}
