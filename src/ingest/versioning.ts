import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { KildeError } from '../errors.js';
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
export const ledgerFields = z.object({
  collection_name: z.string(),
  points: z.number().int().nonnegative(),
  /**
   * Milliseconds since the epoch: last sign of life (`writing`), commit time (`committed`) or
   * retirement time (`retired`).
   */
  at: z.number(),
  /** When the version was first written (`committed` of a restored version, `retired`); else `at`. */
  written_at: z.number().nullish(),
  /** A `writing` entry of a restore: the version's points are kept ones, never deleted by the sweep. */
  restore: z.boolean().optional(),
});
export type LedgerFields = z.infer<typeof ledgerFields>;

type LedgerKind = 'writing' | 'committed' | 'retired';

function ledgerEntry(
  kind: LedgerKind,
  scope: VersionScope,
  points: number,
  at: number,
  extra: { written_at?: number | null; restore?: boolean } = {},
) {
  // `writing` and `retired` entries are per version, `committed` ones per (collection, file): a
  // commit overwrites the previous record. The control character keeps these ids apart from every chunk's.
  const key = kind === 'committed' ? scope.collectionName : scope.version;
  const entry: IndexPoint = {
    id: pointId(scope.fileId, `\u0001${kind}\u0001${key}`, 0),
    content: '',
    meta: {
      collection_name: RESERVED_TENANTS[kind],
      collection_type: LEDGER_TYPE,
      file_id: scope.fileId,
      ingest_version: scope.version,
      split_id: 0,
      kilde_ledger: { collection_name: scope.collectionName, points, at, ...extra },
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
  /**
   * `KEEP_VERSIONS`: how many retired versions of the file (per collection) are kept, out of every
   * tenant's space, for a restore. 0 (default): retired versions are deleted.
   */
  keep?: number;
}

/** How the retirement treats the versions it replaces. */
interface RetireOptions {
  log: Logger;
  now: () => number;
  keep: number;
  /** When the version each committed record names was written (read before it was replaced). */
  writtenAt: ReadonlyMap<string, number>;
  /** Retire every other version, whatever its fence (a restore: the live version is older). */
  all?: boolean;
}

/**
 * Writes one batch of a version streamed in parts (a large file), invisible until `commitVersion`
 * publishes it; `stagedBefore` counts the points staged by earlier batches. The `writing` entry
 * goes first with every batch, so a crash leaves it for the sweep, which removes the staged points.
 * Throws after deleting whatever this version wrote when the batch could not be written.
 */
export async function stageBatch(
  index: VectorIndex,
  scope: VersionScope,
  points: readonly IndexPoint[],
  stagedBefore: number,
  o: CommitOptions,
): Promise<void> {
  await o.lease?.assertHeld();
  const total = stagedBefore + points.length;
  try {
    await index.stageVersion({
      ...scope,
      points,
      writing: () => ledgerEntry('writing', scope, total, o.now()),
      ...(o.signal ? { signal: o.signal } : {}),
    });
  } catch (err) {
    await discardVersion(index, scope, o.log);
    throw err;
  }
}

/**
 * Writes `points` as the new version and retires the others. Throws when the version could not be
 * made visible, after deleting what it wrote. Once it is visible it is committed: a failure to
 * retire the old versions is logged and left to the sweep (the `writing` entry stays for it).
 * `staged`: points of this version already written by `stageBatch`; they become visible with
 * `points`, in the same step.
 */
export async function commitVersion(
  index: VectorIndex,
  scope: VersionScope,
  points: readonly IndexPoint[],
  o: CommitOptions,
  staged = 0,
): Promise<void> {
  // A holder whose lease expired while it converted and embedded writes nothing.
  await o.lease?.assertHeld();
  const keep = o.keep ?? 0;
  const retireOptions: RetireOptions = {
    log: o.log,
    now: o.now,
    keep,
    writtenAt: keep > 0 ? await committedTimes(index, scope) : new Map(),
  };
  let written: { writing: boolean };
  const total = staged + points.length;
  try {
    written = await index.writeVersion({
      ...scope,
      points,
      writing: () => ledgerEntry('writing', scope, total, o.now()),
      committed: ledgerEntry('committed', scope, total, o.now()),
      ...(o.signal ? { signal: o.signal } : {}),
      ...(staged > 0 ? { staged } : {}),
    });
  } catch (err) {
    await discardVersion(index, scope, o.log);
    throw err;
  }
  const fence = o.lease?.fence;
  if (o.lease !== undefined && fence !== undefined) {
    let out: FencedRetire;
    try {
      out = await retireFenced(index, scope, { ...o.lease, fence }, retireOptions, written.writing);
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
    const retired = await retireWithRetry(index, scope, retireOptions);
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
 *
 * With `KEEP_VERSIONS` > 0 the versions it replaces are kept instead (docs/decisions.md, "Kept
 * versions"): a `retired` ledger entry per version first (its collection, points, when written and
 * retired), then one move per version into the `kept` tenant (no reader filtering on collection
 * names sees it), then the same delete for whatever has no version (points older than versioning),
 * then the kept versions of the file in that collection beyond the newest `keep` are deleted.
 */
async function retire(index: VectorIndex, scope: VersionScope, o?: RetireOptions): Promise<number> {
  const fence = fenceOf(scope.version);
  if (o === undefined || o.keep <= 0) {
    if (fence === 0) return index.deleteWhere([others(scope), writingEntryOf(scope)]);
    const lower = [...(await versionsIn(index, scope)).keys()].filter(
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
  const retiring = [...(await versionsIn(index, scope))].filter(
    ([v]) => v !== scope.version && (fence === 0 || o.all === true || fenceOf(v) < fence),
  );
  const at = o.now();
  if (retiring.length > 0) {
    await index.upsert(
      retiring.map(([version, points]) =>
        ledgerEntry('retired', { ...scope, version }, points, at, {
          written_at: o.writtenAt.get(version) ?? null,
        }),
      ),
    );
  }
  let moved = 0;
  for (const [version] of retiring) {
    moved += await index.moveTo(
      { fileId: scope.fileId, collectionNames: [scope.collectionName], ingestVersion: version },
      RESERVED_TENANTS.kept,
    );
  }
  // What is left beside this version has no version id (written before versioning). Fenced, a
  // version with a higher fence may be there too, so only a restore (which retires all) deletes them.
  const leftovers = fence === 0 || o.all === true ? [others(scope)] : [];
  const deleted = await index.deleteWhere([...leftovers, writingEntryOf(scope)]);
  const pruned = await pruneKept(index, scope, o.keep);
  if (pruned > 0) o.log.debug({ ...scope, pruned }, 'deleted kept versions beyond KEEP_VERSIONS');
  return moved + deleted;
}

/** Deletes the kept versions of the file in the scope's collection beyond the newest `keep`. */
async function pruneKept(index: VectorIndex, scope: VersionScope, keep: number): Promise<number> {
  const kept = await retiredEntries(index, scope.fileId, scope.collectionName);
  const doomed = kept.slice(keep);
  if (doomed.length === 0) return 0;
  return index.deleteWhere(
    doomed.flatMap((e) => [
      { fileId: scope.fileId, reserved: 'kept' as const, ingestVersion: e.version },
      { fileId: scope.fileId, reserved: 'retired' as const, ingestVersion: e.version },
    ]),
  );
}

/** A kept version of a file, as its `retired` ledger entry records it. */
export interface RetiredEntry extends LedgerFields {
  version: string;
}

/** The `retired` entries of a file in one collection, newest retirement first. */
export async function retiredEntries(
  index: VectorIndex,
  fileId: string,
  collectionName?: string,
): Promise<RetiredEntry[]> {
  const entries: RetiredEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { reserved: 'retired', fileId },
      { limit: 256, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      const fields = ledgerFields.safeParse(p.meta.kilde_ledger);
      if (!fields.success) continue;
      if (collectionName !== undefined && fields.data.collection_name !== collectionName) continue;
      entries.push({ ...fields.data, version: p.meta.ingest_version });
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return entries.sort(
    (a, b) =>
      b.at - a.at ||
      (b.written_at ?? 0) - (a.written_at ?? 0) ||
      (a.version < b.version ? 1 : a.version > b.version ? -1 : 0),
  );
}

/** The `committed` record of a file in one collection: the version it names, and when written. */
export async function committedRecord(
  index: VectorIndex,
  fileId: string,
  collectionName: string,
): Promise<{ version: string; fields: LedgerFields } | undefined> {
  const page = await index.scroll({ reserved: 'committed', fileId }, { limit: 256 });
  for (const p of page.points) {
    const fields = ledgerFields.safeParse(p.meta.kilde_ledger);
    if (fields.success && fields.data.collection_name === collectionName) {
      return { version: p.meta.ingest_version, fields: fields.data };
    }
  }
  return undefined;
}

/** When the version the committed record names was written (a retirement records it). */
async function committedTimes(index: VectorIndex, scope: VersionScope): Promise<Map<string, number>> {
  const record = await committedRecord(index, scope.fileId, scope.collectionName);
  if (!record) return new Map();
  return new Map([[record.version, record.fields.written_at ?? record.fields.at]]);
}

/** The distinct versions of a file's chunks in one collection, with their point counts. */
async function versionsIn(index: VectorIndex, scope: VersionScope): Promise<Map<string, number>> {
  const versions = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { fileId: scope.fileId, collectionNames: [scope.collectionName], chunksOnly: true },
      { limit: 256, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      const v = p.meta.ingest_version;
      if (typeof v === 'string') versions.set(v, (versions.get(v) ?? 0) + 1);
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
  o: RetireOptions | Logger,
  othersMayExist = true,
): Promise<FencedRetire> {
  const retireOptions: RetireOptions =
    'writtenAt' in o ? o : { log: o, now: Date.now, keep: 0, writtenAt: new Map() };
  const log = retireOptions.log;
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
    return { retired: await retireWithRetry(index, scope, retireOptions), superseded: false };
  } catch (err) {
    log.warn(
      { err, ...scope },
      'the new version is committed, but retiring the older ones failed; the version sweep retires them',
    );
    return { retired: 0, superseded: false };
  }
}

/** One retry: a transient index error should not leave two versions visible until the next sweep. */
async function retireWithRetry(index: VectorIndex, scope: VersionScope, o: RetireOptions): Promise<number> {
  try {
    return await retire(index, scope, o);
  } catch (err) {
    o.log.warn({ err, ...scope }, 'retiring previous versions failed; retrying once');
    return retire(index, scope, o);
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
        restore: fields.data.restore === true,
        writtenAt: fields.data.written_at ?? null,
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
  index: VectorIndex,
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

/** Puts a restore's points back among the kept ones and removes its `writing` entry. */
async function undoRestore(index: VectorIndex, scope: VersionScope): Promise<void> {
  await index.moveTo(
    { fileId: scope.fileId, collectionNames: [scope.collectionName], ingestVersion: scope.version },
    RESERVED_TENANTS.kept,
  );
  await index.deleteWhere(writingEntryOf(scope));
}

/** After a restored version is visible: its `committed` record, then the others retire (kept). */
async function finishRestore(
  index: VectorIndex,
  scope: VersionScope,
  points: number,
  writtenAt: number | null,
  o: { log: Logger; now: () => number; keep: number },
): Promise<number> {
  const before = await committedTimes(index, scope);
  await index.upsert([
    ledgerEntry('committed', scope, points, o.now(), writtenAt === null ? {} : { written_at: writtenAt }),
  ]);
  // It is live now: no longer a kept version.
  await index.deleteWhere({ fileId: scope.fileId, reserved: 'retired', ingestVersion: scope.version });
  return retire(index, scope, { log: o.log, now: o.now, keep: o.keep, writtenAt: before, all: true });
}

export interface RestoreOptions {
  log: Logger;
  now: () => number;
  lease?: Lease;
  /** `KEEP_VERSIONS` (at least 1 while restoring: the version replaced is kept, not lost). */
  keep: number;
}

/**
 * Makes a kept version of a file live again, with an ingest's guarantees (the caller holds the
 * per-`file_id` lock): a `writing` entry marked as a restore, one move of the kept points back into
 * their collection (readers see the whole version at once), a count check, the `committed` record,
 * then the version it replaces is retired (kept, within `KEEP_VERSIONS`). A failure before the
 * version is visible puts it back among the kept ones: the live version stays. Resolves with its
 * point count; restoring the live version changes nothing.
 */
export async function restoreVersion(
  index: VectorIndex,
  scope: VersionScope,
  o: RestoreOptions,
): Promise<number> {
  await o.lease?.assertHeld();
  const entry = (await retiredEntries(index, scope.fileId, scope.collectionName)).find(
    (e) => e.version === scope.version,
  );
  if (entry === undefined) {
    const live = await index.count({
      fileId: scope.fileId,
      collectionNames: [scope.collectionName],
      ingestVersion: scope.version,
    });
    if (live > 0) return live;
    throw versionNotFound(scope);
  }
  const points = await index.count({ fileId: scope.fileId, reserved: 'kept', ingestVersion: scope.version });
  if (points === 0) throw versionNotFound(scope);
  await index.upsert([
    ledgerEntry('writing', scope, points, o.now(), { restore: true, written_at: entry.written_at ?? null }),
  ]);
  try {
    const fence = o.lease?.fence;
    if (o.lease !== undefined && fence !== undefined) {
      // Fenced (Redis): this restore is the newest finished write of the file in the collection.
      const newest = await o.lease.claim(scope.collectionName);
      if (newest > fence) throw new Error(`a newer write (fence ${newest}) finished while restoring`);
    }
    await index.moveTo(
      { fileId: scope.fileId, reserved: 'kept', ingestVersion: scope.version },
      scope.collectionName,
    );
    const visible = await index.count({
      fileId: scope.fileId,
      collectionNames: [scope.collectionName],
      ingestVersion: scope.version,
    });
    if (visible !== points) {
      throw new Error(`version ${scope.version} has ${visible} of its ${points} points after the move`);
    }
  } catch (err) {
    try {
      await undoRestore(index, scope);
    } catch (undoErr) {
      o.log.error({ err: undoErr, ...scope }, 'could not undo a failed restore; the version sweep does');
    }
    throw new KildeError('VECTORDB_WRITE_FAILED', 502, 'Restoring the version failed', { cause: err });
  }
  const finish = () =>
    finishRestore(index, scope, points, entry.written_at ?? null, {
      log: o.log,
      now: o.now,
      keep: Math.max(1, o.keep),
    });
  try {
    // One retry, as for an ingest: a transient error should not leave two versions visible until the sweep.
    await finish().catch((err: unknown) => {
      o.log.warn({ err, ...scope }, 'finishing the restore failed; retrying once');
      return finish();
    });
  } catch (err) {
    o.log.warn(
      { err, ...scope },
      'the restored version is visible, but retiring the replaced one failed; the version sweep finishes it',
    );
  }
  return points;
}

function versionNotFound(scope: VersionScope): KildeError {
  return new KildeError(
    'VERSION_NOT_FOUND',
    404,
    `No kept version ${scope.version} of file_id ${scope.fileId} in ${scope.collectionName}`,
  );
}

function scopeOf(e: VersionScope): VersionScope {
  return { fileId: e.fileId, collectionName: e.collectionName, version: e.version };
}
