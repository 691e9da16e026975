import type { Logger } from 'pino';
import { RESERVED_TENANTS } from '../index/reserved.js';
import type { PointStore } from '../index/store.js';
import type { Lease } from './lease.js';
import {
  everything,
  fenceOf,
  ledgerEntry,
  others,
  retiredEntries,
  type VersionScope,
  versionsIn,
  writingEntryOf,
} from './ledger.js';

/** Retiring the versions a new one replaces: deleted, or kept with `KEEP_VERSIONS` (publish.ts). */

/** How the retirement treats the versions it replaces. */
export interface RetireOptions {
  log: Logger;
  now: () => number;
  keep: number;
  /** When the version each committed record names was written (read before it was replaced). */
  writtenAt: ReadonlyMap<string, number>;
  /** Retire every other version, whatever its fence (a restore: the live version is older). */
  all?: boolean;
}

/**
 * One delete: the other versions and this version's `writing` entry go together. A fenced version
 * (Redis) retires only versions with a LOWER fence: a newer one is never touched.
 *
 * With `KEEP_VERSIONS` > 0 the versions it replaces are kept instead (docs/decisions-index.md, "Kept
 * versions"): a `retired` ledger entry per version first (its collection, points, when written and
 * retired), then one move per version into the `kept` tenant (no reader filtering on collection
 * names sees it), then the same delete for whatever has no version (points older than versioning),
 * then the kept versions of the file in that collection beyond the newest `keep` are deleted.
 */
export async function retire(index: PointStore, scope: VersionScope, o?: RetireOptions): Promise<number> {
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
async function pruneKept(index: PointStore, scope: VersionScope, keep: number): Promise<number> {
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
  index: PointStore,
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
export async function retireWithRetry(
  index: PointStore,
  scope: VersionScope,
  o: RetireOptions,
): Promise<number> {
  try {
    return await retire(index, scope, o);
  } catch (err) {
    o.log.warn({ err, ...scope }, 'retiring previous versions failed; retrying once');
    return retire(index, scope, o);
  }
}
