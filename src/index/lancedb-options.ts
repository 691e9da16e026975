import type { Clock } from '../clock.js';

/** How a LanceDB index is opened and kept: the writer's batching and the table's upkeep (lancedb-maintenance.ts). */
export interface LanceIndexOptions {
  /**
   * Seconds after which a read re-checks the table for commits by other processes (LanceDB's
   * `readConsistencyInterval`); 0 checks on every read. Default 1.
   */
  readConsistencySeconds?: number;
  /** The most rows one group commit merges (one file's version is never split). Default 2000. */
  batchSize?: number;
  /**
   * How long a new file's version waits, journaled and acknowledged, for others to share its commit
   * (lancedb-journal.ts): uploads sent one at a time then make one table version per window instead
   * of one each. 0 commits every version before answering. Default 1000.
   */
  commitWindowMs?: number;
  /** Commits between two background `optimize()` runs (compaction + index refresh). Default 20. */
  optimizeEvery?: number;
  /**
   * Rows written that also trigger an optimize: rows outside the full-text index are searched by
   * brute force, which grows slow long before `optimizeEvery` large batches have passed. Default 10 000.
   */
  optimizeRows?: number;
  /**
   * Old table versions are removed by optimize once this old. Default: twice the index time-out
   * (`VECTORDB_TIMEOUT`), at least a minute: a read still running on an older version has been cut
   * off by its time-out, and readers move to the newest version within `readConsistencySeconds`.
   * Each optimize costs more the more versions are kept, so under steady ingestion a longer window
   * makes every optimize, and the writes queued behind it, slower (docs/performance.md, "Old
   * versions and optimize").
   */
  cleanupOlderThanMs?: number;
  /**
   * An optimize waits at least this many times the previous one's duration after it ended, so that
   * compaction (which grows with the table and its kept versions) takes at most a small share of the
   * writer's time. Default 4; 0 disables the spacing.
   */
  optimizeSpacing?: number;
  /** Time source for optimize spacing and for how long the dense index kind is cached (tests pass a manual clock). Default the system clock. */
  clock?: Clock;
  /**
   * Called when a background build of the dense vector index starts, before LanceDB trains it; the
   * build waits for a returned promise (tests hold a build there to show that writes go on).
   */
  onVectorIndexBuild?: () => Promise<void> | void;
}

/** The default of `LanceIndexOptions.commitWindowMs`. */
export const DEFAULT_COMMIT_WINDOW_MS = 1000;

/** How long old table versions are kept (see `LanceIndexOptions.cleanupOlderThanMs`). */
export function keepVersionsMs(timeoutMs: number): number {
  return Math.max(60_000, 2 * timeoutMs);
}
