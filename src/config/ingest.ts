import { z } from 'zod';
import { chunkingPiece } from './chunking.js';
import { extractionPiece, requireVisionEndpoint } from './extraction.js';
import { bool, int, list, optionalBool, optionalString, redisUrl, string, url } from './fields.js';
import {
  dataPiece,
  embeddingPiece,
  embeddingRules,
  indexPiece,
  requireEmbeddingProvider,
  sparsePiece,
  tokenizerPiece,
} from './index-settings.js';
import { librechatPiece } from './librechat.js';
import { ConfigError } from './parse.js';
import { consolePiece, kernelPieces } from './shared.js';

export const objectStorePiece = {
  OBJECTSTORE_ENDPOINT: url(
    undefined,
    'S3-compatible endpoint (e.g. `http://minio:9000`); unset uses `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`, else AWS S3.',
  ),
  OBJECTSTORE_REGION: optionalString(
    'Object-storage region; falls back to `AWS_REGION`, `AWS_DEFAULT_REGION`, then `us-east-1`.',
  ),
  OBJECTSTORE_ACCESS_KEY: optionalString(
    'Access key id; falls back to `AWS_ACCESS_KEY_ID`. Without any key the AWS SDK default chain applies (IAM role, web identity, profile).',
  ),
  OBJECTSTORE_SECRET_KEY: optionalString('Secret access key; falls back to `AWS_SECRET_ACCESS_KEY`.'),
  OBJECTSTORE_FORCE_PATH_STYLE: optionalBool(
    'Path-style addressing (`{endpoint}/{bucket}/{key}`), as MinIO needs.',
    'true when an endpoint is set, else false',
  ),
  OBJECTSTORE_ALLOWED_BUCKETS: list(
    'Buckets ingest may read from (comma-separated); empty allows any. Others are refused with 403.',
  ),
  AWS_ENDPOINT_URL_S3: url(undefined, 'Standard AWS variable; fallback for `OBJECTSTORE_ENDPOINT`.'),
  AWS_ENDPOINT_URL: url(undefined, 'Standard AWS variable; second fallback for `OBJECTSTORE_ENDPOINT`.'),
  AWS_REGION: optionalString('Standard AWS variable; fallback for `OBJECTSTORE_REGION`.'),
  AWS_DEFAULT_REGION: optionalString('Standard AWS variable; second fallback for `OBJECTSTORE_REGION`.'),
  AWS_ACCESS_KEY_ID: optionalString('Standard AWS variable; fallback for `OBJECTSTORE_ACCESS_KEY`.'),
  AWS_SECRET_ACCESS_KEY: optionalString('Standard AWS variable; fallback for `OBJECTSTORE_SECRET_KEY`.'),
  AWS_SESSION_TOKEN: optionalString('Standard AWS variable: session token sent with the fallback AWS keys.'),
};

export const ingestPiece = {
  ENABLE_SPARSE_EMBEDDINGS: bool(
    false,
    'Adds the BM25 `text-sparse` vector to every point (needed for hybrid search on Qdrant).',
  ),
  SPARSE_EMBEDDING_MODEL: string(
    'Qdrant/bm25',
    "Sparse document encoder; must match retrieval's `SPARSE_QUERY_MODEL`. `Qdrant/bm25` is supported.",
  ),
  MAX_UPLOAD_BYTES: int(
    100 * 1024 * 1024,
    'Largest accepted file (100 MiB): enforced on multipart uploads as they stream and via HeadObject before an object is fetched (413).',
    { min: 1 },
  ),
  INGEST_BATCH_CHUNKS: int(
    1000,
    'Most chunks of one file embedded, encoded and written at a time. A file with more is written in staged batches that stay invisible until the last one is in, then become visible at once (the previous version stays until then); memory stays bounded by the batch, not the file.',
    { min: 1 },
  ),
  INGEST_LARGE_FILES: int(
    2,
    'Files over 1 MiB one process ingests at the same time (uploads and jobs alike); the others wait their turn. Each holds at most one batch (`INGEST_BATCH_CHUNKS`) in memory at a time, so this bounds what large files take; smaller files are not counted.',
    { min: 1, max: 64 },
  ),
  INGEST_SEGMENT_CHARS: int(
    1_000_000,
    'Most characters of extracted text chunked at a time. A longer document is cut into segments before a heading, at a blank line or at a line break (no chunk spans a cut); shorter ones are chunked whole.',
    { min: 10_000 },
  ),
  INGEST_SWEEP_INTERVAL: int(
    60,
    'Seconds between sweeps of ingests interrupted by a crash (finish a version that was committed, remove one that was not); they also run at start-up. 0: at start-up only.',
    { min: 0 },
  ),
  INGEST_SWEEP_GRACE: int(
    300,
    'A version being written whose last sign of life is older than this (seconds) counts as interrupted and is removed by the sweep. Protects ingests other processes are still writing; with one ingest process 0 is safe.',
    { min: 0 },
  ),
  KEEP_VERSIONS: int(
    undefined,
    'Retired versions of each file (per collection) kept for `POST /api/v1/documents/{file_id}/versions/{version}/restore`: a re-ingest moves the replaced version out of every tenant (no search returns it) instead of deleting it, and deletes kept versions beyond this many. 0: retired versions are deleted (the reference behaviour). A setting of the index: recorded in it when set, and unset it is the recorded value, else 0; a value contradicting the recorded one refuses to start (`INDEX_SETTINGS_CONFLICT`, docs/operations.md "Settings recorded in the index").',
    { min: 0, max: 100 },
  ),
  INDEX_SETTINGS_UPDATE: bool(
    false,
    'Lets this process record its own `KEEP_VERSIONS` and embedding in the index over the recorded ones instead of refusing to start (docs/operations.md, "Settings recorded in the index").',
  ),
  ENABLE_INSPECTION_API: bool(
    false,
    'Serves the read-only `GET /api/v1/documents/{file_id}/chunks`; 404 (after the bearer check) when false.',
  ),
};

/** Coordination of several ingestion replicas (docs/scaling.md). */
export const coordinationPiece = {
  REDIS_URL: redisUrl(
    'Redis shared by every ingestion replica (`redis://[:password@]host:6379[/db]`, `rediss://` for TLS). Set: the per-`file_id` lock is a Redis lease with fencing, so replicas never interleave versions of one file. Unset: the lock is in-process (one replica only).',
  ),
  LOCK_LEASE_MS: int(
    30_000,
    'Lifetime of a per-`file_id` lease in Redis (ms). The holder renews it every third of this while its ingest runs; a replica that dies frees it after at most this long.',
    { min: 1000 },
  ),
  LOCK_RETRY_MS: int(
    100,
    'Upper bound of the wait between two attempts to take a held lease (ms; each wait is drawn between a half and the whole of it).',
    { min: 1 },
  ),
};

/** Durable ingestion jobs (`POST /api/v1/jobs`; docs/scaling.md, "Ingestion jobs"). */
export const jobsPiece = {
  JOBS_WORKER_ENABLED: bool(
    true,
    'Runs job workers inside `serve ingest` and `serve all`. False: this process only accepts jobs (`kilde serve worker` processes run them; needs `REDIS_URL`).',
  ),
  JOBS_CONCURRENCY: int(
    8,
    'Jobs one worker process runs at the same time. Small plain-text files (up to 1 MiB) of concurrent jobs share pipeline passes (one extraction task, one embedding call, one commit); larger files take turns, `INGEST_LARGE_FILES` at a time.',
    { min: 1, max: 64 },
  ),
  JOBS_MAX_ATTEMPTS: int(
    3,
    'Runs of a job before it fails. Only retryable failures (embedding 429/5xx, index or Redis unreachable) are retried; a corrupt file fails at once.',
    { min: 1, max: 20 },
  ),
  JOBS_BACKOFF_MS: int(2000, 'Wait before the first retry of a job (ms); it doubles on each further retry.', {
    min: 0,
  }),
  JOBS_HISTORY: int(
    1000,
    'Finished jobs kept for `GET /api/v1/jobs` (done and failed, each); older ones are dropped.',
    { min: 1 },
  ),
  JOBS_STALLED_MS: int(
    30_000,
    "With `REDIS_URL`: a worker's lock on a running job lasts this long (ms) and is renewed at half of it; a job whose worker died (kill -9, node lost) is re-queued by another worker's stalled check within about twice this.",
    { min: 1000 },
  ),
  JOBS_BATCH_MAX_FILES: int(
    1000,
    'Most files of one `POST /api/v1/job-batches` request (`kilde ingest --url` sends its files in batches of at most this many); more is a 413.',
    { min: 1, max: 10_000 },
  ),
  JOBS_BATCH_MAX_BYTES: int(
    256 * 1024 * 1024,
    'Most bytes of the files of one `POST /api/v1/job-batches` request (256 MiB), counted as they stream; past it the request is a 413 and nothing of it is queued. Each file is also held to `MAX_UPLOAD_BYTES` (a larger one fails alone).',
    { min: 1 },
  ),
  JOBS_SPOOL_DIR: optionalString(
    'Where multipart uploads of jobs wait for their worker (the file is removed when the job ends). Default: `kilde-jobs` in the temp dir. Workers in other processes or machines must see the same folder (a shared volume), or submit jobs as S3 references.',
  ),
};

export const ingestSchema = z
  .object({
    ...kernelPieces,
    ...dataPiece,
    ...indexPiece,
    ...embeddingPiece,
    ...sparsePiece,
    ...tokenizerPiece,
    ...extractionPiece,
    ...chunkingPiece,
    ...ingestPiece,
    ...objectStorePiece,
    ...coordinationPiece,
    ...jobsPiece,
    ...librechatPiece,
    ...consolePiece,
  })
  .superRefine(requireEmbeddingProvider('ingest'))
  .superRefine(embeddingRules)
  .superRefine(requireVisionEndpoint);
export type IngestConfig = z.output<typeof ingestSchema>;

/** `kilde serve worker`: the ingest variables; jobs are shared through Redis, so `REDIS_URL` is required. */
export const workerSchema = ingestSchema.superRefine((c, ctx) => {
  if (c.REDIS_URL !== undefined) return;
  ctx.addIssue({
    code: 'custom',
    path: ['REDIS_URL'],
    message:
      'is required by `kilde serve worker`: workers take their jobs from Redis (without it, `serve ingest` and `serve all` run jobs in process)',
  });
});

/** Resolved object-storage settings (OBJECTSTORE_* with the standard AWS variables as fallback). */
export interface ObjectStoreSettings {
  endpoint?: string;
  region: string;
  /** Both keys or neither: without them the SDK's default chain applies (IAM role, web identity, profile). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  forcePathStyle: boolean;
  /** Empty: every bucket is allowed. */
  allowedBuckets: readonly string[];
}

/** OBJECTSTORE_* first, then the standard AWS variables; path style defaults on with an endpoint. */
export function objectStoreSettings(c: IngestConfig): ObjectStoreSettings {
  const endpoint = c.OBJECTSTORE_ENDPOINT ?? c.AWS_ENDPOINT_URL_S3 ?? c.AWS_ENDPOINT_URL;
  const usingOwnKeys = c.OBJECTSTORE_ACCESS_KEY !== undefined || c.OBJECTSTORE_SECRET_KEY !== undefined;
  const accessKeyId = usingOwnKeys ? c.OBJECTSTORE_ACCESS_KEY : c.AWS_ACCESS_KEY_ID;
  const secretAccessKey = usingOwnKeys ? c.OBJECTSTORE_SECRET_KEY : c.AWS_SECRET_ACCESS_KEY;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(
      usingOwnKeys
        ? 'Configuration error: OBJECTSTORE_ACCESS_KEY and OBJECTSTORE_SECRET_KEY must be set together'
        : 'Configuration error: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together',
    );
  }
  const sessionToken = usingOwnKeys ? undefined : c.AWS_SESSION_TOKEN;
  return {
    ...(endpoint ? { endpoint } : {}),
    region: c.OBJECTSTORE_REGION ?? c.AWS_REGION ?? c.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...(accessKeyId && secretAccessKey
      ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } }
      : {}),
    forcePathStyle: c.OBJECTSTORE_FORCE_PATH_STYLE ?? endpoint !== undefined,
    allowedBuckets: c.OBJECTSTORE_ALLOWED_BUCKETS,
  };
}
