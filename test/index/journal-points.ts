import { type IndexPoint, pointId } from '../../src/index/contract.js';
import { ledgerEntry } from '../../src/versions/ledger.js';
import type { VersionWrite } from '../../src/versions/write.js';

/** A version of a new file as the ingestion service writes it (`exclusive`: the in-process lock). */
export function fileVersion(fileId: string, version: string, chunks: number, collection = 'c'): VersionWrite {
  const scope = { fileId, collectionName: collection, version };
  const points: IndexPoint[] = Array.from({ length: chunks }, (_, i) => ({
    id: pointId(fileId, version, i),
    content: `chunk ${i} of ${fileId} version ${version}`,
    meta: {
      collection_name: collection,
      collection_type: 'knowledge',
      file_id: fileId,
      ingest_version: version,
      split_id: i,
    },
  }));
  return {
    ...scope,
    points,
    writing: () => ledgerEntry('writing', scope, chunks, 0),
    committed: ledgerEntry('committed', scope, chunks, 0),
    exclusive: true,
  };
}
