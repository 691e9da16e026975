import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { VectorIndex } from '../index/store.js';

/**
 * Atomic versioned replace: re-ingesting a `file_id` never leaves it half written. Each run stamps its points with a fresh `meta.ingest_version`
 * and writes them beside the previous version, so searches keep finding the old version until the new
 * one is complete; only then are the other versions of the same `file_id` in the same collection
 * deleted. A failed run deletes only its own version. Callers hold the per-`file_id` lock throughout.
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

/** Whether the file already has points in this collection (the `overwrite=false` check). */
export async function hasIndexedVersion(index: VectorIndex, fileId: string, collectionName: string) {
  return (await index.count({ fileId, collectionNames: [collectionName] })) > 0;
}

/** The new version is complete: delete every other (or unversioned) point of the file in its collection. */
export async function retireOtherVersions(index: VectorIndex, scope: VersionScope): Promise<number> {
  return index.deleteWhere({
    fileId: scope.fileId,
    collectionNames: [scope.collectionName],
    notIngestVersion: scope.version,
  });
}

/**
 * Removes what a failed run may have written. It never throws: the run has already failed with its own
 * error. Should the index be down now, the orphaned points carry a version nobody references and the
 * next successful ingest of the file deletes them (it deletes every version but its own).
 */
export async function discardVersion(index: VectorIndex, scope: VersionScope, log: Logger): Promise<void> {
  try {
    const removed = await index.deleteWhere({ fileId: scope.fileId, ingestVersion: scope.version });
    if (removed > 0) log.info({ ...scope, removed }, 'rolled back the points of a failed ingest');
  } catch (err) {
    log.error(
      { err, ...scope },
      'could not roll back a failed ingest; its points stay until the next ingest of this file',
    );
  }
}
