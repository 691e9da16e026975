import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type IndexFilter, type IndexPoint, pointId } from '../index/contract.js';
import { LEDGER_TYPE, RESERVED_TENANTS } from '../index/reserved.js';
import type { VectorIndex } from '../index/store.js';
import type { Lease } from './lock.js';

/**
 * Crash-consistent versioned replace: re-ingesting a `file_id` never leaves it half written, not
 * even across a crash (docs/decisions.md, "Crash-consistent versions").
 *
 * Each run stamps its points with a fresh `meta.ingest_version`. `VectorIndex.writeVersion` makes
 * the whole version visible at once, together with two ledger entries: `writing` (this version is
 * being written: its collection, point count and last sign of life) and `committed` (the version
 * of the file that is committed in that collection). One delete then removes the other versions of
 * the file in that collection and the `writing` entry. A crash leaves at most a `writing` entry
 * behind, and the sweep settles it: a version whose points are all visible is finished (the other
 * versions retired), anything less is removed, so the previous version stays. Callers hold the
 * per-`file_id` lock throughout, and the sweep takes it too.
 */
export interface VersionScope {
  fileId: string;
  collectionName: string;
  version: string;
}

/** 32 lowercase hex characters (128 random bits). */
export function newIngestVersion(): string {
  return randomBytes(16).toString('hex');
}

/**
 * A version written under a fenced lease (Redis): the fence as 16 hex digits, a dot, 16 random hex
 * digits. The fence orders the versions of a file_id; {@link fenceOf} reads it back.
 */
export function fencedVersion(fence: number): string {
  return `${fence.toString(16).padStart(16, '0')}.${randomBytes(8).toString('hex')}`;
}

/** The fence a version was written under; 0 for a version written without one (older than any fenced). */
export function fenceOf(version: string): number {
  const m = /^([0-9a-f]{16})\.[0-9a-f]{16}$/.exec(version);
  return m ? Number.parseInt(m[1]!, 16) : 0;
}

/** Whether the file already has points in this collection (the `overwrite=false` check). */
export async function hasIndexedVersion(index: VectorIndex, fileId: string, collectionName: string) {
  return (await index.count({ fileId, collectionNames: [collectionName] })) > 0;
}

/** `meta.kilde_ledger` of a ledger entry. */
const ledgerFields = z.object({
  collection_name: z.string(),
  points: z.number().int().nonnegative(),
  /** Milliseconds since the epoch: last sign of life (`writing`) or commit time (`committed`). */
  at: z.number(),
});

function ledgerEntry(kind: 'writing' | 'committed', scope: VersionScope, points: number, at: number) {
  // `writing` entries are per version, `committed` ones per (collection, file): a commit overwrites
  // the previous record. The control character keeps these ids apart from every chunk's.
  const key = kind === 'writing' ? scope.version : scope.collectionName;
  const entry: IndexPoint = {
    id: pointId(scope.fileId, `\u0001${kind}\u0001${key}`, 0),
    content: '',
    meta: {
      collection_name: RESERVED_TENANTS[kind],
      collection_type: LEDGER_TYPE,
      file_id: scope.fileId,
      ingest_version: scope.version,
      split_id: 0,
      kilde_ledger: { collection_name: scope.collectionName, points, at },
    },
  };
  return entry;
}

/** This version's points, wherever they are (staged, published, ledger entries naming it). */
const everything = (s: VersionScope): IndexFilter => ({ fileId: s.fileId, ingestVersion: s.version });
/** The other versions of the file in its collection. */
const others = (s: VersionScope): IndexFilter => ({
  fileId: s.fileId,
  collectionNames: [s.collectionName],
  notIngestVersion: s.version,
});
const writingEntryOf = (s: VersionScope): IndexFilter => ({
  reserved: 'writing',
  fileId: s.fileId,
  ingestVersion: s.version,
});

export interface CommitOptions {
  log: Logger;
  now: () => number;
  signal?: AbortSignal;
  /** The per-file_id lease the caller holds; a fenced one (Redis) is checked and claimed. */
  lease?: Lease;
}

/**
 * Writes `points` as the new version and retires the others. Throws when the version could not be
 * made visible, after deleting what it wrote. Once it is visible it is committed: a failure to
 * retire the old versions is logged and left to the sweep (the `writing` entry stays for it).
 */
export async function commitVersion(
  index: VectorIndex,
  scope: VersionScope,
  points: readonly IndexPoint[],
  o: CommitOptions,
): Promise<void> {
  // A holder whose lease expired while it converted and embedded writes nothing.
  await o.lease?.assertHeld();
  let written: { writing: boolean };
  try {
    written = await index.writeVersion({
      ...scope,
      points,
      writing: () => ledgerEntry('writing', scope, points.length, o.now()),
      committed: ledgerEntry('committed', scope, points.length, o.now()),
      ...(o.signal ? { signal: o.signal } : {}),
    });
  } catch (err) {
    await discardVersion(index, scope, o.log);
    throw err;
  }
  const fence = o.lease?.fence;
  if (o.lease !== undefined && fence !== undefined) {
    let out: FencedRetire;
    try {
      out = await retireFenced(index, scope, { ...o.lease, fence }, o.log, written.writing);
    } catch (err) {
      // Unfenced (Redis unreachable) the version must not stay: the previous one does.
      await discardVersion(index, scope, o.log);
      throw err;
    }
    o.log.debug({ ...scope, fence, ...out }, 'retired older versions');
    return;
  }
  // A first version (LanceDB) has no other version to retire and left no `writing` entry.
  if (!written.writing) return;
  try {
    const retired = await retireWithRetry(index, scope, o.log);
    o.log.debug({ ...scope, retired }, 'retired previous versions');
  } catch (err) {
    o.log.warn(
      { err, ...scope },
      'the new version is committed, but retiring the previous ones failed; the version sweep retires them',
    );
  }
}

/**
 * One delete: the other versions and this version's `writing` entry go together. A fenced version
 * (Redis) retires only versions with a LOWER fence: a newer one is never touched.
 */
async function retire(index: VectorIndex, scope: VersionScope): Promise<number> {
  const fence = fenceOf(scope.version);
  if (fence === 0) return index.deleteWhere([others(scope), writingEntryOf(scope)]);
  const lower = [...(await versionsIn(index, scope))].filter(
    (v) => v !== scope.version && fenceOf(v) < fence,
  );
  return index.deleteWhere([
    ...lower.map((v) => ({
      fileId: scope.fileId,
      collectionNames: [scope.collectionName],
      ingestVersion: v,
    })),
    writingEntryOf(scope),
  ]);
}

/** The distinct versions of a file's chunks in one collection. */
async function versionsIn(index: VectorIndex, scope: VersionScope): Promise<Set<string>> {
  const versions = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { fileId: scope.fileId, collectionNames: [scope.collectionName], chunksOnly: true },
      { limit: 256, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      if (typeof p.meta.ingest_version === 'string') versions.add(p.meta.ingest_version);
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return versions;
}

export interface FencedRetire {
  /** Points of older versions deleted. */
  retired: number;
  /** A newer write or delete had already finished: this version was removed instead. */
  superseded: boolean;
}

/**
 * Retiring under a fenced lease (Redis): the version is complete; it claims its fence, then deletes
 * only the versions of the file in its collection with a LOWER fence. A version with a higher fence
 * is never touched: should this holder's lease have expired while it wrote, the newer holder's work
 * stays. When the claim answers a newer fence (a newer version or a delete finished first) this
 * version removes itself. Any interleaving leaves exactly the newest finished version: a newer
 * holder claims before it lists the versions, so either it sees this version (and retires it) or
 * this version's claim sees its fence (docs/scaling.md, "Fencing").
 */
export async function retireFenced(
  index: VectorIndex,
  scope: VersionScope,
  lease: Lease & { fence: number },
  log: Logger,
  othersMayExist = true,
): Promise<FencedRetire> {
  const newest = await lease.claim(scope.collectionName);
  if (newest > lease.fence) {
    await index.deleteWhere(everything(scope));
    log.warn(
      { ...scope, fence: lease.fence, newest },
      'a newer write of this file finished first (this lease had expired): this version was removed',
    );
    return { retired: 0, superseded: true };
  }
  if (!othersMayExist) return { retired: 0, superseded: false };
  try {
    return { retired: await retireWithRetry(index, scope, log), superseded: false };
  } catch (err) {
    log.warn(
      { err, ...scope },
      'the new version is committed, but retiring the older ones failed; the version sweep retires them',
    );
    return { retired: 0, superseded: false };
  }
}

/** One retry: a transient index error should not leave two versions visible until the next sweep. */
async function retireWithRetry(index: VectorIndex, scope: VersionScope, log: Logger): Promise<number> {
  try {
    return await retire(index, scope);
  } catch (err) {
    log.warn({ err, ...scope }, 'retiring previous versions failed; retrying once');
    return retire(index, scope);
  }
}

/**
 * Removes what a failed run may have written: its points, staged or not, and its ledger entries.
 * It never throws: the run has already failed with its own error. Should the index be down now,
 * the `writing` entry (if it was written) stays, and the sweep removes the version later.
 */
export async function discardVersion(index: VectorIndex, scope: VersionScope, log: Logger): Promise<void> {
  try {
    const removed = await index.deleteWhere(everything(scope));
    if (removed > 0) log.info({ ...scope, removed }, 'rolled back the points of a failed ingest');
  } catch (err) {
    log.error(
      { err, ...scope },
      'could not roll back a failed ingest; the version sweep removes its points later',
    );
  }
}

export interface SweepOptions {
  log: Logger;
  now: () => number;
  /** A `writing` entry younger than this may belong to a live writer in another process. */
  graceMs: number;
  /** Versions this process is writing right now: never touched. */
  inFlight: (version: string) => boolean;
  /** Runs `fn` under the per-`file_id` lock the ingests take. */
  lock: <T>(fileId: string, fn: () => Promise<T>) => Promise<T>;
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
}

/**
 * Settles every `writing` entry that no live writer owns: finishes a version whose points are all
 * visible (it was committed; only its clean-up was interrupted) and removes any other.
 */
export async function sweepVersions(index: VectorIndex, o: SweepOptions): Promise<SweepReport> {
  const report: SweepReport = { finished: 0, removed: 0, waiting: 0 };
  for (const entry of await writingEntries(index, o.log)) {
    const outcome = await o.lock(entry.fileId, () => settle(index, entry, o));
    report[outcome] += 1;
  }
  if (report.finished + report.removed > 0)
    o.log.info({ ...report }, 'version sweep settled interrupted ingests');
  return report;
}

async function writingEntries(index: VectorIndex, log: Logger): Promise<WritingEntry[]> {
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
      });
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return entries;
}

async function settle(
  index: VectorIndex,
  entry: WritingEntry,
  o: SweepOptions,
): Promise<'finished' | 'removed' | 'waiting'> {
  if (o.inFlight(entry.version)) return 'waiting';
  const visible = await index.count({
    fileId: entry.fileId,
    ingestVersion: entry.version,
    collectionNames: [entry.collectionName],
  });
  const fence = fenceOf(entry.version);
  if (fence > 0 && [...(await versionsIn(index, entry))].some((v) => fenceOf(v) > fence)) {
    // Fenced (Redis): a newer version of the file is there; this older one never retires it.
    const removed = await index.deleteWhere(everything(entry));
    o.log.info({ ...scopeOf(entry), removed }, 'version sweep removed a version a newer one superseded');
    return 'removed';
  }
  if (visible > 0 && visible === entry.points) {
    // Committed before the crash: record it (Qdrant writes the record last) and retire the rest.
    await index.upsert([ledgerEntry('committed', entry, entry.points, o.now())]);
    const retired = await retire(index, entry);
    o.log.info({ ...scopeOf(entry), retired }, 'version sweep finished an interrupted ingest');
    return 'finished';
  }
  if (o.now() - entry.at < o.graceMs) return 'waiting';
  const removed = await index.deleteWhere(everything(entry));
  o.log.info({ ...scopeOf(entry), removed }, 'version sweep removed an interrupted ingest');
  return 'removed';
}

function scopeOf(e: VersionScope): VersionScope {
  return { fileId: e.fileId, collectionName: e.collectionName, version: e.version };
}
