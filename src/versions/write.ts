import type { IndexFilter, IndexPoint } from '../index/contract.js';
import { RESERVED_TENANTS } from '../index/reserved.js';
import type { PointStore, Presence } from '../index/store.js';
import { committedRecord, others, writingEntryOf } from './ledger.js';
import { writeTogether } from './write-together.js';

/**
 * The two writes of a version, over any `PointStore` (publish.ts drives them): a batch staged
 * invisibly (`stageVersion`), and the step that makes a whole version visible (`writeVersion`). The
 * store says how its writes land (`atomicUpsert`), and the path follows:
 *
 * - A store whose upsert is one atomic commit (LanceDB) writes a version's points and its ledger
 *   entries in one upsert, and no `writing` entry when the file has no other version in that
 *   collection (a first ingest has nothing to retire). A file with no row at all there yet (no
 *   chunk, no `committed` entry, whose id is fixed per file and collection), written under a lock no
 *   other process shares (`exclusive`), is upserted with `append`: its ids are all new (the version
 *   id is fresh), so the store may append without a merge by id, or journal it (lancedb-journal.ts).
 * - A store whose requests apply in parts but which writes in order (Qdrant's batch endpoint,
 *   `PointStore.ordered`) writes a version that fits one request once, straight under its
 *   collection, in one upsert operation with both ledger entries, its retirement after it in the
 *   same request (write-together.ts).
 * - Otherwise (a larger version), and for a version streamed in batches, the points go under the
 *   staging tenant with the `writing` entry in every part, one `moveTo` moves them into their
 *   collection, the count is checked, then `committed` is written (with the retirement, in one
 *   request, where the store writes in order).
 *
 * On failure what was written stays for the caller to delete (the `writing` entry marks it).
 */

/** One new version of one file, as `writeVersion` makes it visible. */
export interface VersionWrite {
  fileId: string;
  collectionName: string;
  version: string;
  /** The chunks, stamped with `collectionName` and `version`. */
  points: readonly IndexPoint[];
  /** The ledger entry saying this version is being written; built afresh for every write (its clock moves). */
  writing: () => IndexPoint;
  /** The ledger entry naming this version the committed one of the file in its collection. */
  committed: IndexPoint;
  /** Aborted: stop before the version becomes visible (nothing of it will be). */
  signal?: AbortSignal;
  /**
   * Points of this version already written by `stageVersion` (a large file streamed in batches):
   * they become visible together with `points`, in the same step. 0 or absent: `points` is the
   * whole version.
   */
  staged?: number;
  /**
   * The caller's lock on the file is this process's alone (not a lease shared by replicas), so no
   * other writer can add the file's rows meanwhile: a version of a file with nothing in the index
   * yet (no chunk in the collection, no `committed` entry) may be appended without a merge by id.
   */
  exclusive?: boolean;
  /**
   * The caller retires the file's other versions in the collection by deleting them with its
   * `writing` entry (unfenced, none kept: write-together.ts `retireTogether`). A store that writes
   * in order (`PointStore.ordered`) does it in the same request as the version and says so
   * (`retired` in the result).
   */
  retire?: boolean;
}

/** What `writeVersion` left: a `writing` entry for the retirement, or the retirement done. */
export interface Written {
  writing: boolean;
  /** The other versions and the `writing` entry are deleted already (`VersionWrite.retire`). */
  retired?: boolean;
}

/** One batch of a version that is streamed in parts (`stageVersion`). */
export interface StagedBatch {
  fileId: string;
  collectionName: string;
  version: string;
  /** This batch's chunks, stamped with `collectionName` and `version`. */
  points: readonly IndexPoint[];
  /** The `writing` ledger entry, counting every point staged so far including this batch. */
  writing: () => IndexPoint;
  signal?: AbortSignal;
}

/**
 * Writes one batch of a version under the staging tenant, invisible to every reader filtering on
 * collection names, with the `writing` entry in every part (it exists before the first staged point,
 * and its time says the writer is alive: the sweep leaves a recent one alone).
 */
export async function stageVersion(store: PointStore, b: StagedBatch): Promise<void> {
  b.signal?.throwIfAborted();
  const staging = RESERVED_TENANTS.staging;
  await store.upsert(
    b.points.map((p) => ({ ...p, meta: { ...p.meta, collection_name: staging } })),
    { withEach: b.writing, ...(b.signal ? { signal: b.signal } : {}) },
  );
}

/**
 * Makes a new version of a file visible as a whole, never in part: when it resolves every point
 * (and the `committed` entry) is there; until then no reader filtering on collection names sees
 * any of them. Resolves with whether a `writing` entry was left for the retirement.
 */
export async function writeVersion(store: PointStore, v: VersionWrite): Promise<Written> {
  v.signal?.throwIfAborted();
  if ((v.staged ?? 0) > 0) return stageAndMove(store, v);
  // Versions written at once share their requests (write-together.ts), where a store that writes
  // in order writes each point once, under its collection, with its ledger entries and retirement.
  if (!store.atomicUpsert) return writeTogether(store, v, stageAndMove);
  // The versions written in one pass (or by concurrent requests) ask together where the store
  // shares one read among them (lancedb-presence.ts); their upserts are group-committed.
  const found = await presenceOf(store, v);
  v.signal?.throwIfAborted();
  const append = v.exclusive === true && !found.chunks && !found.id;
  await store.upsert([...v.points, ...(found.chunks ? [v.writing()] : []), v.committed], { append });
  return { writing: found.chunks };
}

/** Staged under the staging tenant, moved into the collection in one operation, counted, recorded. */
async function stageAndMove(store: PointStore, v: VersionWrite): Promise<Written> {
  await stageVersion(store, v);
  v.signal?.throwIfAborted();
  const mine: IndexFilter = { fileId: v.fileId, ingestVersion: v.version };
  // One operation moves the whole version into its collection: readers filtering on collection
  // names (the reference retrieval service included) see none of it before, all of it after.
  await store.moveTo({ ...mine, reserved: 'staging' }, v.collectionName, { counted: false });
  const total = (v.staged ?? 0) + v.points.length;
  const visible = await store.count({ ...mine, collectionNames: [v.collectionName] });
  if (visible !== total) {
    throw new Error(
      `version ${v.version} of ${v.fileId} has ${visible} of its ${total} points after publishing`,
    );
  }
  // The retirement rides along where the store writes in order: one request, not two. Should the
  // request fail, the record is written alone and the caller retires as without it (a failed
  // retirement never takes back a committed version).
  if (v.retire === true && store.ordered) {
    const retired = await store.ordered
      .write([{ upsert: [v.committed] }, { delete: [others(v), writingEntryOf(v)] }])
      .then(
        () => true,
        () => false,
      );
    if (retired) return { writing: true, retired: true };
  }
  await store.upsert([v.committed]);
  return { writing: true };
}

/** Whether the file has chunks in the collection, and whether its `committed` entry exists. */
async function presenceOf(store: PointStore, v: VersionWrite): Promise<Presence> {
  const query = {
    fileId: v.fileId,
    collectionName: v.collectionName,
    id: v.committed.id,
    ...(v.exclusive === true ? { exclusive: true } : {}),
  };
  if (store.presence) return store.presence(query);
  const [chunks, record] = await Promise.all([
    store.count({ fileId: v.fileId, collectionNames: [v.collectionName] }),
    committedRecord(store, v.fileId, v.collectionName),
  ]);
  return { chunks: chunks > 0, id: record !== undefined };
}
