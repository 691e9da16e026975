import { EXTRACTION_POOL_ERRORS } from '../extract/limits.js';
import { workerEntry } from '../pool/worker-pool.js';
import type { IngestTasks } from './pool-worker.js';

export type { IngestSetup, IngestTasks } from './pool-worker.js';

/**
 * The ingestion pipeline's pool (build.ts): its workers run extraction's, chunking's and the
 * lexical stage's tasks (pool-worker.ts), and a task whose worker had to go fails as extraction's.
 */
export const INGEST_POOL = {
  worker: workerEntry(import.meta.url, 'pool-worker'),
  errors: EXTRACTION_POOL_ERRORS,
};

/** A pool of Kilde's ingestion tasks, as build.ts makes one. */
export type IngestPool = import('../pool/worker-pool.js').WorkerPool<IngestTasks>;
