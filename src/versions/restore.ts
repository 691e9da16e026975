import type { Logger } from 'pino';
import { KildeError } from '../errors.js';
import { RESERVED_TENANTS } from '../index/reserved.js';
import type { PointStore } from '../index/store.js';
import type { Lease } from './lease.js';
import { committedTimes, ledgerEntry, retiredEntries, type VersionScope, writingEntryOf } from './ledger.js';
import { retire } from './retire.js';

/** Making a kept version live again (docs/decisions-index.md, "Kept versions"; publish.ts). */

/** Puts a restore's points back among the kept ones and removes its `writing` entry. */
export async function undoRestore(index: PointStore, scope: VersionScope): Promise<void> {
  await index.moveTo(
    { fileId: scope.fileId, collectionNames: [scope.collectionName], ingestVersion: scope.version },
    RESERVED_TENANTS.kept,
  );
  await index.deleteWhere(writingEntryOf(scope));
}

/** After a restored version is visible: its `committed` record, then the others retire (kept). */
export async function finishRestore(
  index: PointStore,
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
  index: PointStore,
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
    throw new KildeError('VECTORDB_WRITE_FAILED', 'Restoring the version failed', { cause: err });
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

export function versionNotFound(scope: VersionScope): KildeError {
  return new KildeError(
    'VERSION_NOT_FOUND',
    `No kept version ${scope.version} of file_id ${scope.fileId} in ${scope.collectionName}`,
  );
}
