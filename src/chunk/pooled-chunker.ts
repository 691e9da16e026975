import type { WorkerPool } from '../pool/worker-pool.js';
import type { Chunk, Chunker } from './chunker.js';
import type { ChunkTasks } from './pool-task.js';
import type { ChunkInput } from './segments.js';

/** Chunks a request's documents at once, away from the caller's thread (the ingestion pipeline's form). */
export interface BatchChunker {
  readonly mode: Chunker['mode'];
  /** Each input is a whole document or one segment of one (src/chunk/segments.ts). */
  chunkAll(docs: readonly ChunkInput[], signal?: AbortSignal): Promise<Chunk[][]>;
}

/**
 * Chunking in the worker pool: tokenising a whole document and placing windows over it costs
 * seconds for a long one, which on the event loop would stall every other request.
 */
export function createPooledChunker(pool: WorkerPool<ChunkTasks>, mode: Chunker['mode']): BatchChunker {
  return {
    mode,
    chunkAll: (docs, signal) =>
      pool.run(
        {
          kind: 'chunk',
          docs: docs.map((d) => ({
            text: d.text,
            ...(d.pages ? { pages: d.pages } : {}),
            ...(d.outer ? { outer: d.outer } : {}),
          })),
        },
        // Light work (merged with other queued small tasks, one worker) up to the pool's limits.
        { signal, weight: docs.reduce((n, d) => n + d.text.length, 0) },
      ),
  };
}
