import { type IndexPoint, pointId } from '../../src/index/contract.js';

/** `n` chunks of one version of a file, as the ingest service writes them (the LanceDB tests' rows). */
export function filePoints(fileId: string, version: string, n: number, collection = 'c'): IndexPoint[] {
  return Array.from({ length: n }, (_, splitId) => ({
    id: pointId(fileId, version, splitId),
    content: `${fileId} ${version} chunk ${splitId}`,
    meta: {
      collection_name: collection,
      collection_type: 'file',
      file_id: fileId,
      ingest_version: version,
      split_id: splitId,
    },
  }));
}
