import type { Schemas } from '@qdrant/js-client-rest';
import { z } from 'zod';
import type { IndexPoint } from './contract.js';
import { anyOf } from './qdrant-filter.js';
import type { QdrantCall, QdrantHttp } from './qdrant-http.js';
import { toPointStruct, updateResult } from './qdrant-points.js';
import type { OrderedWrites, WriteStep } from './store.js';

/**
 * `PointStore.ordered` over Qdrant's `POST /collections/{name}/points/batch`: the steps go as one
 * request of update operations, which the server applies one after the other (each awaited as the
 * `wait` of the request says, each one entry of its write-ahead log) and stops at the first that
 * fails, answering the error. One request instead of one per step: on small files the requests,
 * not the points, were most of Qdrant's CPU (docs/qdrant.md).
 */

/**
 * Qdrant refuses bodies over 32 MiB by default (`service.max_request_size_mb`); `weigh` estimates
 * from above and a request stays under half of that. A request refused all the same (a server
 * configured lower, text of control characters) fails before anything is applied, and its files go
 * the staged way (write-together.ts).
 */
const MAX_BYTES = 16 * 1024 * 1024;

const batchResult = z.array(updateResult);

/**
 * Bytes of the points as JSON, from above: a float takes at most 24 characters with its comma, a
 * sparse entry 36, content at most three bytes a UTF-16 unit (UTF-8 of the BMP; a quote, backslash or
 * line break becomes two characters, only another control character six, which chunks hardly hold),
 * meta as written.
 */
export function weighPoints(points: readonly IndexPoint[]): number {
  let bytes = 0;
  for (const p of points) {
    bytes += 160 + p.id.length + 3 * p.content.length + 3 * JSON.stringify(p.meta).length;
    if (p.dense) bytes += 24 * p.dense.length;
    if (p.sparse) bytes += 36 * p.sparse.indices.length;
  }
  return bytes;
}

export function qdrantOrdered(o: {
  http: QdrantHttp;
  base: string;
  denseDim: number | undefined;
  write: (method: 'POST', path: string, body: unknown) => QdrantCall;
}): OrderedWrites {
  const operation = (s: WriteStep): Schemas['UpdateOperation'] | undefined => {
    if ('upsert' in s) {
      if (s.upsert.length === 0) return undefined;
      return { upsert: { points: s.upsert.map((p) => toPointStruct(p, o.denseDim)) } };
    }
    const filter = anyOf(s.delete, 'refusing to delete every point: a delete needs a filter');
    return filter && { delete: { filter } };
  };
  return {
    maxBytes: MAX_BYTES,
    weigh: weighPoints,
    async write(steps, options = {}) {
      options.signal?.throwIfAborted();
      const operations = steps.map(operation).filter((op) => op !== undefined);
      if (operations.length === 0) return;
      const body: Schemas['UpdateOperations'] = { operations };
      await o.http.call(o.write('POST', `${o.base}/points/batch`, body), batchResult);
    },
  };
}
