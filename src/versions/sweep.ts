import type { Logger } from 'pino';
import type { PointStore } from '../index/store.js';
import {
  committedTimes,
  everything,
  fenceOf,
  ledgerEntry,
  ledgerFields,
  scopeOf,
  type VersionScope,
  versionsIn,
} from './ledger.js';
import { finishRestore, undoRestore } from './restore.js';
import { retire } from './retire.js';

/** The version sweep: settles the `writing` entries a crash left behind (publish.ts). */

export interface SweepOptions {
  log: Logger;
  now: () => number;
  /** A `writing` entry younger than this may belong to a live writer in another process. */
  graceMs: number;
  /** Versions this process is writing right now: never touched. */
  inFlight: (version: string) => boolean;
  /** Runs `fn` under the per-`file_id` lock the ingests take. */
  lock: <T>(fileId: string, fn: () => Promise<T>) => Promise<T>;
  /** `KEEP_VERSIONS`: a finished version keeps the ones it replaces, as the ingest would have. */
  keep?: number;
}

export interface SweepReport {
  /** Complete versions whose retirement of the previous ones was finished. */
  finished: number;
  /** Incomplete versions removed (the previous version stays). */
  removed: number;
  /** Entries left alone: in flight here, or younger than the grace period. */
  waiting: number;
}

interface WritingEntry extends VersionScope {
  points: number;
  at: number;
  restore: boolean;
  writtenAt: number | null;
}

/**
 * Settles every `writing` entry that no live writer owns: finishes a version whose points are all
 * visible (it was committed; only its clean-up was interrupted) and removes any other.
 */
export async function sweepVersions(index: PointStore, o: SweepOptions): Promise<SweepReport> {
  const report: SweepReport = { finished: 0, removed: 0, waiting: 0 };
  for (const entry of await writingEntries(index, o.log)) {
    const outcome = await o.lock(entry.fileId, () => settle(index, entry, o));
    report[outcome] += 1;
  }
  if (report.finished + report.removed > 0)
    o.log.info({ ...report }, 'version sweep settled interrupted ingests');
  return report;
}

async function writingEntries(index: PointStore, log: Logger): Promise<WritingEntry[]> {
  const entries: WritingEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { reserved: 'writing' },
      { limit: 256, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      const fields = ledgerFields.safeParse(p.meta.kilde_ledger);
      if (!fields.success) {
        log.warn({ id: p.id, fileId: p.meta.file_id }, 'ignoring a malformed version ledger entry');
        continue;
      }
      entries.push({
        fileId: p.meta.file_id,
        version: p.meta.ingest_version,
        collectionName: fields.data.collection_name,
        points: fields.data.points,
        at: fields.data.at,
        restore: fields.data.restore === true,
        writtenAt: fields.data.written_at ?? null,
      });
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return entries;
}

async function settle(
  index: PointStore,
  entry: WritingEntry,
  o: SweepOptions,
): Promise<'finished' | 'removed' | 'waiting'> {
  if (o.inFlight(entry.version)) return 'waiting';
  if (entry.restore) return settleRestore(index, entry, o);
  const visible = await index.count({
    fileId: entry.fileId,
    ingestVersion: entry.version,
    collectionNames: [entry.collectionName],
  });
  const fence = fenceOf(entry.version);
  if (fence > 0 && [...(await versionsIn(index, entry)).keys()].some((v) => fenceOf(v) > fence)) {
    // Fenced (Redis): a newer version of the file is there; this older one never retires it.
    const removed = await index.deleteWhere(everything(entry));
    o.log.info({ ...scopeOf(entry), removed }, 'version sweep removed a version a newer one superseded');
    return 'removed';
  }
  if (visible > 0 && visible === entry.points) {
    // Committed before the crash: record it (Qdrant writes the record last) and retire the rest.
    const keep = o.keep ?? 0;
    const writtenAt = keep > 0 ? await committedTimes(index, entry) : new Map<string, number>();
    await index.upsert([ledgerEntry('committed', entry, entry.points, o.now())]);
    const retired = await retire(index, entry, { log: o.log, now: o.now, keep, writtenAt });
    o.log.info({ ...scopeOf(entry), retired }, 'version sweep finished an interrupted ingest');
    return 'finished';
  }
  if (o.now() - entry.at < o.graceMs) return 'waiting';
  const removed = await index.deleteWhere(everything(entry));
  o.log.info({ ...scopeOf(entry), removed }, 'version sweep removed an interrupted ingest');
  return 'removed';
}

/**
 * An interrupted restore: its version's points are kept ones, so it is never deleted. All of them
 * in the collection: the restore was committed; finish it as the restore would have. Anything
 * less: what moved goes back to the kept tenant, and the live version stays.
 */
async function settleRestore(
  index: PointStore,
  entry: WritingEntry,
  o: SweepOptions,
): Promise<'finished' | 'removed' | 'waiting'> {
  const scope = scopeOf(entry);
  const visible = await index.count({
    fileId: entry.fileId,
    ingestVersion: entry.version,
    collectionNames: [entry.collectionName],
  });
  if (visible > 0 && visible === entry.points) {
    await finishRestore(index, scope, entry.points, entry.writtenAt, {
      log: o.log,
      now: o.now,
      keep: Math.max(1, o.keep ?? 0),
    });
    o.log.info({ ...scope }, 'version sweep finished an interrupted restore');
    return 'finished';
  }
  if (o.now() - entry.at < o.graceMs) return 'waiting';
  await undoRestore(index, scope);
  o.log.info({ ...scope }, 'version sweep undid an interrupted restore; the live version stays');
  return 'removed';
}
