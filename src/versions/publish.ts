import type { Logger } from 'pino';
import type { IndexPoint } from '../index/contract.js';
import type { PointStore } from '../index/store.js';
import type { Lease } from './lease.js';
import { committedTimes, everything, ledgerEntry, type VersionScope } from './ledger.js';
import { type FencedRetire, type RetireOptions, retireFenced, retireWithRetry } from './retire.js';
import { stageVersion, type Written, writeVersion } from './write.js';
import { retireTogether } from './write-together.js';

/**
 * Crash-consistent versioned replace: re-ingesting a `file_id` never leaves it half written, not
 * even across a crash (docs/decisions-index.md, "Crash-consistent versions").
 *
 * Each run stamps its points with a fresh `meta.ingest_version`. `writeVersion` (write.ts) makes
 * the whole version visible at once, together with two ledger entries: `writing` (this version is
 * being written: its collection, point count and last sign of life) and `committed` (the version
 * of the file that is committed in that collection). One delete then removes the other versions of
 * the file in that collection and the `writing` entry. A crash leaves at most a `writing` entry
 * behind, and the sweep settles it: a version whose points are all visible is finished (the other
 * versions retired), anything less is removed, so the previous version stays. Callers hold the
 * per-`file_id` lock throughout, and the sweep takes it too.
 *
 * The parts, all over the storage-only `PointStore` (src/index/store.ts): this module commits a
 * version (`stageBatch`, `commitVersion`, `discardVersion`); write.ts writes it (staged, or whole
 * by the store's kind of write); ledger.ts holds the version ids, fences and ledger entries;
 * retire.ts retires the versions a new one replaces (`retireFenced`); restore.ts makes a kept
 * version live again (`restoreVersion`); sweep.ts settles what a crash left (`sweepVersions`).
 */

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

/**
 * Writes one batch of a version streamed in parts (a large file), invisible until `commitVersion`
 * publishes it; `stagedBefore` counts the points staged by earlier batches. The `writing` entry
 * goes first with every batch, so a crash leaves it for the sweep, which removes the staged points.
 * Throws after deleting whatever this version wrote when the batch could not be written.
 */
export async function stageBatch(
  index: PointStore,
  scope: VersionScope,
  points: readonly IndexPoint[],
  stagedBefore: number,
  o: CommitOptions,
): Promise<void> {
  await o.lease?.assertHeld();
  const total = stagedBefore + points.length;
  try {
    await stageVersion(index, {
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
  index: PointStore,
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
  let written: Written;
  const total = staged + points.length;
  const lease = o.lease;
  const fence = lease?.fence;
  const fenced = lease !== undefined && fence !== undefined;
  try {
    written = await writeVersion(index, {
      ...scope,
      points,
      writing: () => ledgerEntry('writing', scope, total, o.now()),
      committed: ledgerEntry('committed', scope, total, o.now()),
      ...(o.signal ? { signal: o.signal } : {}),
      ...(staged > 0 ? { staged } : {}),
      // Under the in-process lock (no fence) this process is the file's only writer.
      ...(o.lease !== undefined && o.lease.fence === undefined ? { exclusive: true } : {}),
      // Unfenced, none kept, in parts (Qdrant): the delete below, which may ride along.
      ...(!fenced && !index.atomicUpsert && keep <= 0 ? { retire: true } : {}),
    });
  } catch (err) {
    await discardVersion(index, scope, o.log);
    throw err;
  }
  if (fenced) {
    let out: FencedRetire;
    try {
      out = await retireFenced(index, scope, { ...lease, fence }, retireOptions, written.writing);
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
  if (written.retired) {
    o.log.debug(scope, 'retired previous versions with the write');
    return;
  }
  try {
    // Deleted, not kept, from a store that writes in parts (Qdrant): with the others of this turn.
    if (!index.atomicUpsert && keep <= 0) {
      await retireTogether(index, scope).catch((err: unknown) => {
        o.log.warn({ err, ...scope }, 'retiring previous versions failed; retrying once');
        return retireTogether(index, scope);
      });
      o.log.debug(scope, 'retired previous versions');
      return;
    }
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
 * Removes what a failed run may have written: its points, staged or not, and its ledger entries.
 * It never throws: the run has already failed with its own error. Should the index be down now,
 * the `writing` entry (if it was written) stays, and the sweep removes the version later.
 */
export async function discardVersion(index: PointStore, scope: VersionScope, log: Logger): Promise<void> {
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
