import type { Timer } from '../clock.js';
import { WriteBatcher } from './lancedb-batch.js';
import type { CommitJournal } from './lancedb-journal.js';
import { KnownFiles } from './lancedb-known.js';

/**
 * One serialised writer per LanceDB table per process. Lance commits are optimistic: concurrent
 * writers to one table conflict and retry, so every instance in this process that writes a given
 * table shares one promise queue (and one optimize counter) keyed by directory and table name.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  /** Runs `task` after every task queued before it, whether those failed or not. */
  run<T>(task: () => Promise<T>): Promise<T> {
    this.pending += 1;
    const result = this.tail.then(task, task).finally(() => {
      this.pending -= 1;
    });
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves once everything queued so far has finished. */
  async idle(): Promise<void> {
    while (this.pending > 0) await this.tail;
  }
}

export interface TableWriter {
  readonly queue: SerialQueue;
  /** Upserts and deletes, group-committed through `queue`. */
  readonly batcher: WriteBatcher;
  /** The file_ids the table may hold, and the versions this process committed (lancedb-known.ts). */
  readonly known: KnownFiles;
  /** Write operations since the last optimize. */
  writesSinceOptimize: number;
  /** Rows written since the last optimize. */
  rowsSinceOptimize: number;
  /** Whether an optimize is queued and not yet run. */
  optimizeQueued: boolean;
  /** How long the last optimize took and when it ended (ms), to keep optimizes spaced out. */
  lastOptimizeMs: number;
  lastOptimizeEnd: number;
  /** A deferred optimize, waiting for the spacing to pass. */
  deferred: Timer | undefined;
  /** Writes (and table or index creations) that have landed; see `VectorIndex.writeEpoch`. */
  epoch: number;
  /** The dense vector index build in progress (outside the queue), if any. */
  vectorBuild: Promise<void> | undefined;
  /** New files' versions waiting for their window's commit (lancedb-journal.ts); set by the first instance. */
  journal: CommitJournal | undefined;
  /** The replay of ended processes' journal segments, once per process and table. */
  recovered: Promise<void> | undefined;
}

interface Entry {
  writer: TableWriter;
  refs: number;
}

const writers = new Map<string, Entry>();

function keyOf(directory: string, table: string): string {
  return `${directory}\u0000${table}`;
}

/** `batchRows` applies when this call creates the writer (the first instance on the table). */
export function acquireWriter(directory: string, table: string, batchRows: number): TableWriter {
  const key = keyOf(directory, table);
  const found = writers.get(key);
  if (found) {
    found.refs += 1;
    return found.writer;
  }
  const queue = new SerialQueue();
  const known = new KnownFiles();
  const writer: TableWriter = {
    queue,
    batcher: new WriteBatcher(queue, batchRows, known),
    known,
    writesSinceOptimize: 0,
    rowsSinceOptimize: 0,
    optimizeQueued: false,
    lastOptimizeMs: 0,
    lastOptimizeEnd: 0,
    deferred: undefined,
    epoch: 0,
    vectorBuild: undefined,
    journal: undefined,
    recovered: undefined,
  };
  writers.set(key, { writer, refs: 1 });
  return writer;
}

export function releaseWriter(directory: string, table: string): void {
  const key = keyOf(directory, table);
  const found = writers.get(key);
  if (!found) return;
  found.refs -= 1;
  if (found.refs <= 0) {
    found.writer.deferred?.cancel();
    writers.delete(key);
  }
}
