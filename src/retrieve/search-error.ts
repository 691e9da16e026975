import { KildeError } from '../errors.js';
import { QdrantError } from '../index/qdrant-http.js';

/**
 * A failure that is not Kilde's own becomes SEARCH_FAILED, or, when the index itself could not
 * answer (Qdrant unreachable, a node down, an error status), 503 VECTORDB_FAILED, so the client and
 * the operator see which dependency failed; the kernel hides 5xx messages.
 */
export function asSearchError(err: unknown): unknown {
  if (err instanceof KildeError) return err;
  if (err instanceof QdrantError) {
    return new KildeError('VECTORDB_FAILED', 'Vector index unavailable', {
      variant: 'unavailable',
      cause: err,
      detail: err.message,
      expose: true,
    });
  }
  return new KildeError('SEARCH_FAILED', 'Search failed', { cause: err });
}
