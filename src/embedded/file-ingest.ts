import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileIdFor } from '../index/identifiers.js';
import { checkFileName } from '../ingest/request.js';
import type { IngestOutcome, IngestService } from '../ingest/service.js';

export { contentHash } from './content-hash.js';

export interface LocalFile {
  /** Absolute path. */
  path: string;
  /** Path used for the file_id and `meta.source`. */
  relative: string;
}

export interface LocalIngestOptions {
  collection: string;
  userId: string;
  collectionType?: string;
}

/** Ingests one local file through the service: same lock, same versioning as `PUT /api/v1/ingest`. */
export async function ingestLocalFile(
  service: IngestService,
  file: LocalFile,
  o: LocalIngestOptions,
): Promise<IngestOutcome & { fileId: string }> {
  // A file named with a control character (a NUL cannot be, but \x01 or ESC can) fails alone.
  checkFileName(file.relative, 'the file path');
  const fileId = fileIdFor(o.collection, file.relative);
  const outcome = await service.ingest(
    {
      fileId,
      filename: basename(file.path),
      collectionName: o.collection,
      collectionType: o.collectionType ?? 'file',
      userId: o.userId,
      overwrite: true,
      source: file.relative,
    },
    async () => ({ path: file.path, filename: basename(file.path), bytes: (await stat(file.path)).size }),
  );
  return { ...outcome, fileId };
}
