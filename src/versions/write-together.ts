import type { IndexFilter, IndexPoint } from '../index/contract.js';
import { RESERVED_TENANTS } from '../index/reserved.js';
import type { PointStore } from '../index/store.js';
import { others, type VersionScope, writingEntryOf } from './ledger.js';
import type { VersionWrite } from './write.js';

/**
 * Versions written in the same turn of the event loop (the files of one pipeline pass, or concurrent
 * requests) to a store whose upsert lands in parts (Qdrant) are published together, one request per
 * step for all of them instead of one per file: their points staged in shared upserts (every
 * `writing` entry in the first), one `moveTo` per collection, one count of them all, one upsert of
 * their `committed` entries. Each version still becomes visible whole, at once, or not at all: a
 * move is one operation per collection, and each file's rollback is its own delete.
 *
 * A failure before anything moved is retried file by file (`alone`), so one file's bad point fails
 * only that file; a failure after a move fails every file of the group, each of which then deletes
 * its own version (the previous one stays). A count short of the total is resolved by counting file
 * by file. Their retirements go together too (`retireTogether`).
 */
type Alone = (store: PointStore, v: VersionWrite) => Promise<{ writing: boolean }>;

interface Waiting {
  v: VersionWrite;
  resolve(written: { writing: boolean }): void;
  reject(err: unknown): void;
}

const groups = new WeakMap<PointStore, Waiting[]>();

export function writeTogether(
  store: PointStore,
  v: VersionWrite,
  alone: Alone,
): Promise<{ writing: boolean }> {
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

async function publishGroup(store: PointStore, all: Waiting[], alone: Alone): Promise<void> {
  const group = all.filter((w) => {
    if (!w.v.signal?.aborted) return true;
    w.reject(w.v.signal.reason);
    return false;
  });
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
