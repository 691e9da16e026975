import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { fileIdFor } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import type { IngestService } from '../ingest/service.js';
import { contentHash, ingestLocalFile, type LocalFile } from './file-ingest.js';

const manifestSchema = z.object({
  collection: z.string(),
  files: z.record(z.string(), z.object({ relative: z.string(), sha256: z.string() })),
});
type Manifest = z.infer<typeof manifestSchema>;

export interface SyncResult {
  ingested: number;
  unchanged: number;
  removed: number;
  failed: { file: string; error: string }[];
  chunks: number;
}

export interface FolderSyncOptions {
  service: IngestService;
  index: VectorIndex;
  files: readonly LocalFile[];
  collection: string;
  userId: string;
  /** JSON file remembering each file's content hash, so unchanged files are skipped next time. */
  manifestPath: string;
  log: Logger;
}

async function readManifest(path: string, collection: string): Promise<Manifest> {
  const empty: Manifest = { collection, files: {} };
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return empty;
  try {
    const parsed = manifestSchema.parse(JSON.parse(text));
    return parsed.collection === collection ? parsed : empty;
  } catch {
    return empty;
  }
}

async function writeManifest(path: string, manifest: Manifest): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(tmp, path);
}

/**
 * Keeps a collection equal to a folder: new or changed files are ingested, unchanged ones skipped
 * (same content hash and still in the index), vanished ones deleted. The quickstart runs it over
 * Kilde's own docs on every start.
 */
export async function syncFolder(o: FolderSyncOptions): Promise<SyncResult> {
  const before = await readManifest(o.manifestPath, o.collection);
  const after: Manifest = { collection: o.collection, files: {} };
  const result: SyncResult = { ingested: 0, unchanged: 0, removed: 0, failed: [], chunks: 0 };
  for (const file of o.files) {
    const fileId = fileIdFor(o.collection, file.relative);
    try {
      const sha256 = await contentHash(file.path);
      const known = before.files[fileId];
      // The index may have been wiped since (another VECTORDB_INDEX, a deleted directory): check it.
      if (
        known?.sha256 === sha256 &&
        (await o.index.count({ fileId, collectionNames: [o.collection] })) > 0
      ) {
        after.files[fileId] = known;
        result.unchanged += 1;
        continue;
      }
      const outcome = await ingestLocalFile(o.service, file, { collection: o.collection, userId: o.userId });
      after.files[fileId] = { relative: file.relative, sha256 };
      result.ingested += 1;
      result.chunks += outcome.chunksCount;
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      o.log.warn({ file: file.relative, err }, 'folder sync: ingest failed');
      result.failed.push({ file: file.relative, error });
    }
  }
  for (const fileId of Object.keys(before.files)) {
    if (after.files[fileId] || o.files.some((f) => fileIdFor(o.collection, f.relative) === fileId)) continue;
    await o.service.deleteFile(fileId).then(
      () => {
        result.removed += 1;
      },
      (err: unknown) => o.log.warn({ fileId, err }, 'folder sync: delete failed'),
    );
  }
  await writeManifest(o.manifestPath, after);
  return result;
}
