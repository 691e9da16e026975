import type { IndexFilter, IndexPoint } from '../index/contract.js';
import { RESERVED_TENANTS } from '../index/reserved.js';
import type { OrderedWrites, PointStore, WriteStep } from '../index/store.js';
import { packRuns } from '../pack.js';
import { others, type VersionScope, writingEntryOf } from './ledger.js';
import type { VersionWrite, Written } from './write.js';

/**
 * Versions written in the same turn of the event loop (the files of one pipeline pass, or concurrent
 * requests) to a store whose upsert lands in parts (Qdrant) are published together, sharing their
 * requests instead of paying them per file.
 *
 * Where the store writes in order (`PointStore.ordered`: Qdrant's batch endpoint), a version that
 * fits one request is written once, straight under its collection: one upsert operation holds its
 * `writing` entry, its points and its `committed` entry (one entry of Qdrant's write-ahead log,
 * replayed whole after a crash: the same guarantee as the staged version's one move), and a delete
 * after it in the same request retires the file's other versions and the `writing` entry
 * (`VersionWrite.retire`). Several files share the request up to its size. A crash between the two
 * operations leaves the `writing` entry with every point visible: the sweep finishes it. After a
 * failed request each of its files is counted: written whole (the answer was lost), it is done, and
 * the caller retires; else it goes on the staged path alone (`alone`), so one file the server refuses
 * fails alone.
 *
 * The others (too large for one request, or a store without ordered writes) are staged together:
 * their points in shared upserts (every `writing` entry in the first), one `moveTo` per collection,
 * one count of them all, one upsert of their `committed` entries. Each version still becomes visible
 * whole, at once, or not at all: a move is one operation per collection, and each file's rollback is
 * its own delete. A failure before anything moved is retried file by file (`alone`), so one file's
 * bad point fails only that file; a failure after a move fails every file of the group, each of
 * which then deletes its own version (the previous one stays). A count short of the total is
 * resolved by counting file by file. Their retirements go together too (`retireTogether`).
 */
type Alone = (store: PointStore, v: VersionWrite) => Promise<Written>;

interface Waiting {
  v: VersionWrite;
  resolve(written: Written): void;
  reject(err: unknown): void;
}

const groups = new WeakMap<PointStore, Waiting[]>();

export function writeTogether(store: PointStore, v: VersionWrite, alone: Alone): Promise<Written> {
  return new Promise((resolve, reject) => {
    const group = groups.get(store);
    if (group) {
      group.push({ v, resolve, reject });
      return;
    }
    const fresh: Waiting[] = [{ v, resolve, reject }];
    groups.set(store, fresh);
    setImmediate(() => {
      groups.delete(store);
      void publishGroup(store, fresh, alone);
    });
  });
}

/** A version's points with its two ledger entries, as one upsert operation writes them. */
const wholeVersion = (v: VersionWrite): IndexPoint[] => [v.writing(), ...v.points, v.committed];

/** The versions that fit one request, packed into requests of at most `maxBytes`; and the rest. */
function pack(group: Waiting[], ordered: OrderedWrites): { requests: Waiting[][]; rest: Waiting[] } {
  // The ledger entries weigh little; 2 KiB stands for them.
  const weighed = group.map((w) => ({ w, weight: ordered.weigh(w.v.points) + 2048 }));
  const fits = weighed.filter((x) => x.weight <= ordered.maxBytes);
  const requests = packRuns(fits, (x) => x.weight, { maxWeight: ordered.maxBytes }).map((r) =>
    r.map((x) => x.w),
  );
  const rest = weighed.filter((x) => x.weight > ordered.maxBytes).map((x) => x.w);
  return { requests, rest };
}

/** One request: the versions' points and ledger entries in one upsert, then their retirement. */
async function writeOnce(store: PointStore, ordered: OrderedWrites, part: Waiting[], alone: Alone) {
  const steps: WriteStep[] = [{ upsert: part.flatMap((w) => wholeVersion(w.v)) }];
  const retiring = part.filter((w) => w.v.retire === true);
  if (retiring.length > 0) {
    steps.push({ delete: retiring.flatMap((w) => [others(w.v), writingEntryOf(w.v)]) });
  }
  try {
    await ordered.write(steps);
  } catch {
    for (const w of part) afterFailure(store, w.v, alone).then(w.resolve, w.reject);
    return;
  }
  for (const w of part) w.resolve(w.v.retire === true ? { writing: true, retired: true } : { writing: true });
}

/**
 * A version of a failed shared request. All its points visible: the request was applied and its
 * answer lost (a time-out, a dropped connection), and the version is written, with its `writing`
 * entry for the caller's retirement: it is not written again, which would hide it while staged. Else
 * (nothing of the request applied: an upsert operation is refused whole) it goes the staged way alone.
 */
async function afterFailure(store: PointStore, v: VersionWrite, alone: Alone): Promise<Written> {
  const mine = { fileId: v.fileId, ingestVersion: v.version, collectionNames: [v.collectionName] };
  const visible = await store.count(mine).catch(() => -1);
  if (visible === v.points.length) return { writing: true };
  return alone(store, v);
}

async function publishGroup(store: PointStore, all: Waiting[], alone: Alone): Promise<void> {
  const unaborted = all.filter((w) => {
    if (!w.v.signal?.aborted) return true;
    w.reject(w.v.signal.reason);
    return false;
  });
  let group = unaborted;
  if (store.ordered) {
    const { requests, rest } = pack(unaborted, store.ordered);
    for (const part of requests) await writeOnce(store, store.ordered, part, alone);
    group = rest;
  }
  await publishStaged(store, group, alone);
}

async function publishStaged(store: PointStore, group: Waiting[], alone: Alone): Promise<void> {
  if (group.length <= 1) {
    for (const w of group) alone(store, w.v).then(w.resolve, w.reject);
    return;
  }
  const staging = RESERVED_TENANTS.staging;
  const staged: IndexPoint[] = group.flatMap((w) =>
    w.v.points.map((p) => ({ ...p, meta: { ...p.meta, collection_name: staging } })),
  );
  try {
    await store.upsert([...group.map((w) => w.v.writing()), ...staged]);
  } catch {
    // Nothing is visible yet: each file on its own, so a bad one fails alone.
    for (const w of group) alone(store, w.v).then(w.resolve, w.reject);
    return;
  }
  const mine = (v: VersionWrite): IndexFilter => ({ fileId: v.fileId, ingestVersion: v.version });
  try {
    const collections = new Map<string, VersionWrite[]>();
    for (const { v } of group)
      collections.set(v.collectionName, [...(collections.get(v.collectionName) ?? []), v]);
    for (const [collectionName, versions] of collections) {
      const filters = versions.map((v) => ({ ...mine(v), reserved: 'staging' as const }));
      await store.moveTo(filters, collectionName, { counted: false });
    }
    const visible = (v: VersionWrite): IndexFilter => ({ ...mine(v), collectionNames: [v.collectionName] });
    const total = group.reduce((n, w) => n + w.v.points.length, 0);
    const complete = (await store.count(group.map((w) => visible(w.v)))) === total;
    const done: Waiting[] = [];
    for (const w of group) {
      const n = complete ? w.v.points.length : await store.count(visible(w.v));
      if (n === w.v.points.length) done.push(w);
      else {
        w.reject(
          new Error(
            `version ${w.v.version} of ${w.v.fileId} has ${n} of its ${w.v.points.length} points after publishing`,
          ),
        );
      }
    }
    if (done.length > 0) await store.upsert(done.map((w) => w.v.committed));
    for (const w of done) w.resolve({ writing: true });
  } catch (err) {
    for (const w of group) w.reject(err);
  }
}

const retiring = new WeakMap<PointStore, { scopes: VersionScope[]; deleted: Promise<void> }>();

/**
 * The retirement of versions committed in the same turn (unfenced, none kept: retire.ts's delete),
 * as one delete of every file's other versions and `writing` entry, not counted (on Qdrant a count
 * is a request of its own; nothing reads the number but a debug line). Resolves when it is done.
 */
export function retireTogether(store: PointStore, scope: VersionScope): Promise<void> {
  let group = retiring.get(store);
  if (!group) {
    const scopes: VersionScope[] = [];
    const deleted = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      retiring.delete(store);
      await store.deleteWhere(
        scopes.flatMap((s) => [others(s), writingEntryOf(s)]),
        { counted: false },
      );
    });
    group = { scopes, deleted };
    retiring.set(store, group);
  }
  group.scopes.push(scope);
  return group.deleted;
}
