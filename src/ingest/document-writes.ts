import type { Logger } from 'pino';
import { KildeError } from '../errors.js';
import type { SourceFile } from '../extract/extractor.js';
import type { IndexFilter } from '../index/contract.js';
import type { VectorIndex } from '../index/store.js';
import type { Lease } from '../versions/lease.js';
import { fencedVersion, hasIndexedVersion, newIngestVersion } from '../versions/ledger.js';
import { restoreVersion, versionNotFound } from '../versions/restore.js';
import { type SweepReport, sweepVersions } from '../versions/sweep.js';
import { collectionOf, reading } from './knowledge.js';
import { DELETED_SCOPE, type FileLock } from './lock.js';
import { type IngestTarget, invalid } from './request.js';
import { type StageObserver, timed } from './stages.js';

/**
 * The service's side of the version protocol (IngestService delegates here): naming an ingest's new
 * version, restoring a kept one, settling what a crash left, and the knowledge API's deletes (a
 * file, a document of one collection, a collection). Each runs under the file's lock.
 */
export interface DocumentWrites {
  index: VectorIndex;
  log: Logger;
  lock: FileLock;
  now: () => number;
  /** `KEEP_VERSIONS`. */
  keep: number;
  /** Versions this process is writing now (the version sweep leaves them alone). */
  writing: Set<string>;
}

/**
 * Makes a kept version live again (src/versions/restore.ts, `restoreVersion`). Resolves with the
 * collection and the version's chunk count. With `within` (a per-tenant key's collections), a file
 * or collection outside them is missing: the same 404.
 */
export function restore(
  d: DocumentWrites,
  fileId: string,
  version: string,
  collectionName?: string,
  within?: ReadonlySet<string>,
): Promise<{ collectionName: string; chunksCount: number }> {
  return d.lock.run(fileId, async (lease) => {
    const { index, log } = d;
    const collection = collectionName ?? (await reading(() => collectionOf(index, fileId, within)));
    if (collection === undefined) {
      throw new KildeError('VERSION_NOT_FOUND', `No versions of file_id ${fileId}`);
    }
    if (within && !within.has(collection))
      throw versionNotFound({ fileId, collectionName: collection, version });
    d.writing.add(version);
    try {
      const chunksCount = await restoreVersion(
        index,
        { fileId, collectionName: collection, version },
        { log, now: d.now, lease, keep: d.keep },
      );
      log.info({ fileId, collection, version, chunks: chunksCount }, 'restored version');
      return { collectionName: collection, chunksCount };
    } catch (err) {
      if (err instanceof KildeError) throw err;
      throw new KildeError('VECTORDB_WRITE_FAILED', 'Restoring the version failed', { cause: err });
    } finally {
      d.writing.delete(version);
    }
  });
}

/** Deletes every point of the file: every version, every collection. Waits for a running ingest. */
export function deleteFile(d: DocumentWrites, fileId: string): Promise<number> {
  // Every point goes, the version ledger and staged points too; the answer counts chunks.
  return deleteLocked(d, fileId, { fileId, chunksOnly: true }, { fileId }, (deleted) =>
    d.log.info({ fileId, deleted }, 'deleted file'),
  );
}

/**
 * Deletes a document of one collection: all of it, kept versions and ledger included, when its
 * chunks live in that collection only; else only its chunks there, the other collections' untouched.
 * 404 when it has none there.
 */
export async function deleteDocument(
  d: DocumentWrites,
  fileId: string,
  collectionName: string,
): Promise<number> {
  const { index } = d;
  const here = await reading(() => index.count({ fileId, collectionNames: [collectionName] }));
  if (here === 0) throw new KildeError('NOT_FOUND', `No document ${fileId} in ${collectionName}`);
  const everywhere = await reading(() => index.count({ fileId, chunksOnly: true }));
  if (everywhere === here) return deleteFile(d, fileId);
  const there = { fileId, collectionNames: [collectionName] };
  return deleteLocked(d, fileId, there, there, (deleted) =>
    d.log.info({ fileId, collection: collectionName, deleted }, 'deleted file from a collection'),
  );
}

/** Under the file's lock, its delete claimed: counts `counted`, deletes `removed`, answers the count. */
function deleteLocked(
  d: DocumentWrites,
  fileId: string,
  counted: IndexFilter,
  removed: IndexFilter,
  done: (deleted: number) => void,
): Promise<number> {
  return d.lock.run(fileId, async (lease) => {
    // Fenced (Redis): a holder whose lease expired and finishes later removes its own version.
    await lease.claim(DELETED_SCOPE);
    try {
      const deleted = await d.index.count(counted);
      await d.index.deleteWhere(removed);
      done(deleted);
      return deleted;
    } catch (err) {
      throw new KildeError('DELETE_FAILED', 'Deleting from the vector index failed', { cause: err });
    }
  });
}

/**
 * Deletes every document of a collection, one file at a time under its lock (`deleteDocument`).
 * 404 when the collection has no chunks.
 */
export async function deleteCollection(
  d: DocumentWrites,
  collectionName: string,
): Promise<{ documents: number; chunks: number }> {
  const { index } = d;
  if ((await reading(() => index.count({ collectionNames: [collectionName] }))) === 0) {
    throw new KildeError('NOT_FOUND', `No collection ${collectionName}`);
  }
  let documents = 0;
  let chunks = 0;
  const done = new Set<string>();
  for (;;) {
    // Split 0 of each file: deleting while paging would move a cursor's ground, so re-read page 1.
    const page = await reading(() =>
      index.scroll({ collectionNames: [collectionName], splitId: 0 }, { limit: 100 }),
    );
    const ids = [...new Set(page.points.map((p) => p.meta.file_id))].filter((id) => !done.has(id));
    if (ids.length === 0) break;
    for (const id of ids) {
      done.add(id);
      chunks += await deleteDocument(d, id, collectionName).catch((err: unknown) => {
        if (err instanceof KildeError && err.code === 'NOT_FOUND') return 0;
        throw err;
      });
      documents += 1;
    }
  }
  // Chunks without a split 0 (none are written so; a partial write of an older version).
  const rest = await index.count({ collectionNames: [collectionName] });
  if (rest > 0) {
    await index.deleteWhere({ collectionNames: [collectionName] });
    chunks += rest;
  }
  d.log.info({ collection: collectionName, documents, chunks }, 'deleted collection');
  return { documents, chunks };
}

/**
 * Under the file's lock, before its pipeline runs: `overwrite=false` refuses a file already indexed
 * in the collection (409), then the file is loaded and its new version named (fenced under a Redis
 * lease).
 */
export async function prepareVersion(
  parts: { index: VectorIndex; observer?: StageObserver | undefined },
  target: IngestTarget,
  load: () => Promise<SourceFile & { bytes: number }>,
  lease: Lease,
): Promise<{ file: SourceFile & { bytes: number }; version: string }> {
  if (!target.overwrite) {
    const exists = await timed(
      parts.observer,
      'write',
      { code: 'VECTORDB_WRITE_FAILED', message: 'Vector index unavailable' },
      () => hasIndexedVersion(parts.index, target.fileId, target.collectionName),
    );
    if (exists) {
      throw invalid(
        `file_id ${target.fileId} is already indexed in ${target.collectionName} (overwrite=false)`,
        'conflict',
      );
    }
  }
  const file = await load();
  return { file, version: lease.fence === undefined ? newIngestVersion() : fencedVersion(lease.fence) };
}

/**
 * Settles the versions interrupted by a crash (src/versions/sweep.ts): at start-up and
 * periodically. `graceMs` protects versions other processes may still be writing.
 */
export function sweep(d: DocumentWrites, graceMs: number): Promise<SweepReport> {
  return sweepVersions(d.index, {
    log: d.log,
    now: d.now,
    graceMs,
    inFlight: (version) => d.writing.has(version),
    lock: (fileId, fn) => d.lock.run(fileId, () => fn()),
    keep: d.keep,
  });
}
