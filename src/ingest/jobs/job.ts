import { z } from 'zod';
import { describeCause, isRetryable, KildeError } from '../../errors.js';
import type { IngestTarget } from '../request.js';

/** A job's life: queued (also while it waits to be retried) → running → done | failed; or cancelled while queued. */
export const JOB_STATES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** The stage a running job is in (the pipeline's `dense` is `embed` on the wire). */
export const JOB_STAGES = ['fetch', 'upload', 'convert', 'chunk', 'embed', 'sparse', 'write'] as const;
export type JobStage = (typeof JOB_STAGES)[number];

/** Where the job's file comes from: the object store (fetched by the worker), or the spool folder. */
export type JobSource =
  | { kind: 'object'; bucket: string; key: string }
  | { kind: 'spool'; path: string; bytes: number; mimeType?: string };

/** What a job is asked to do: the same target `PUT /api/v1/ingest` parses, and where the file is. */
export interface JobPayload {
  target: IngestTarget;
  source: JobSource;
}

/** The body `PUT /api/v1/ingest` answers on success; a done job's `result`. */
export interface IngestSuccessBody {
  status: true;
  collection_name: string;
  chunks_count: number;
  extraction: { engine: string; profile: string | null; route?: string; signal?: string };
}

export interface JobError {
  code: string;
  message: string;
  /** The stage the run failed in (none: before its first stage), so a client can say which. */
  stage?: JobStage | null;
}

/** The progress a running job reports (stage entered, chunk counts). */
export interface JobProgress {
  stage: JobStage;
  chunksTotal?: number;
  chunksDone?: number;
}

/** A job as both queues keep it, before it is written on the wire. */
export interface JobRecord {
  id: string;
  payload: JobPayload;
  state: JobState;
  stage: JobStage | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  chunksTotal: number | null;
  chunksDone: number;
  attempts: number;
  result: IngestSuccessBody | null;
  error: JobError | null;
  /** The failure of the last run while the job waits to be retried. */
  lastError: JobError | null;
}

const iso = z.string();
const jobErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  /** Added to the contract: the stage the run failed in (`upload`, `convert`, `chunk`, `embed`, …). */
  stage: z.enum(JOB_STAGES).nullable().optional(),
});

/** `Job` on the wire (docs: the API contract's Jobs section), snake_case. */
/** The success body of `PUT /api/v1/ingest`, also a done job's `result`. */
export const ingestSuccessSchema = z.object({
  status: z.literal(true),
  collection_name: z.string(),
  chunks_count: z.number().int(),
  extraction: z.object({
    engine: z.string(),
    profile: z.string().nullable(),
    route: z.string().optional(),
    signal: z.string().optional(),
  }),
});

export const jobSchema = z.object({
  job_id: z.string(),
  state: z.enum(JOB_STATES),
  stage: z.enum(JOB_STAGES).nullable(),
  file_id: z.string(),
  collection_name: z.string(),
  name: z.string().nullable(),
  created_at: iso,
  started_at: iso.nullable(),
  finished_at: iso.nullable(),
  progress: z.object({ chunks_total: z.number().int().nullable(), chunks_done: z.number().int() }),
  attempts: z.number().int(),
  result: ingestSuccessSchema.nullable(),
  error: jobErrorSchema.nullable(),
  /** Added to the contract: why the last run failed while the job waits for its retry. */
  last_error: jobErrorSchema.nullable(),
});
export type Job = z.infer<typeof jobSchema>;

const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function toWire(r: JobRecord): Job {
  return {
    job_id: r.id,
    state: r.state,
    stage: r.state === 'running' ? r.stage : null,
    file_id: r.payload.target.fileId,
    collection_name: r.payload.target.collectionName,
    name: r.payload.target.filename || null,
    created_at: at(r.createdAt) ?? new Date(0).toISOString(),
    started_at: at(r.startedAt),
    finished_at: at(r.finishedAt),
    progress: { chunks_total: r.chunksTotal, chunks_done: r.chunksDone },
    attempts: r.attempts,
    result: r.result,
    error: r.error,
    last_error: r.state === 'queued' ? r.lastError : null,
  };
}

export const isTerminal = (s: JobState) => s === 'done' || s === 'failed' || s === 'cancelled';

/**
 * A failure as a job shows it: the code and the message a client of `PUT /api/v1/ingest` would see
 * (a 5xx's internals stay in the log, as on the synchronous route).
 */
export function jobErrorOf(err: unknown): JobError {
  if (err instanceof KildeError) return { code: err.code, message: err.publicMessage };
  return { code: 'INTERNAL', message: 'Internal server error' };
}

/**
 * Whether a failed run is worth another: the failure says it may pass later (`isRetryable`:
 * embedding 429/5xx, index or Redis unreachable), and it is not about the request or the file
 * (a 4xx such as a missing object or a corrupt file never passes on a retry).
 */
export function retryableJobFailure(err: unknown): boolean {
  if (err instanceof KildeError && err.statusCode < 500) return false;
  return isRetryable(err);
}

/** For the log: the whole cause chain. */
export const describeJobFailure = (err: unknown) => describeCause(err);

export interface JobContext {
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  /** Aborted when the worker shuts down. */
  signal: AbortSignal;
  progress(p: JobProgress): void;
}

/** Runs one job to its result; a thrown error fails the run (retried only when `isRetryable`). */
export type JobHandler = (payload: JobPayload, ctx: JobContext) => Promise<IngestSuccessBody>;

/** Releases what a job holds outside the queue (its spooled upload) once it has ended. */
export type JobCleanup = (payload: JobPayload) => Promise<void>;

/**
 * The ingestion job queue: BullMQ on Redis (`REDIS_URL`, durable, shared by every process) or
 * in-process (same API and semantics, gone with the process). docs/scaling.md, "Ingestion jobs".
 */
export interface JobQueue {
  readonly kind: 'redis' | 'memory';
  /**
   * Queues a job (state `queued`) under `id` (default: a new UUID; a spooled upload names its
   * folder after it); JOBS_UNAVAILABLE when the queue cannot be reached.
   */
  submit(payload: JobPayload, id?: string): Promise<Job>;
  get(id: string): Promise<Job | undefined>;
  /** Newest first; at most `limit`. */
  list(limit: number, state?: JobState): Promise<Job[]>;
  /** Cancels a queued job (JOB_NOT_FOUND, JOB_NOT_CANCELLABLE). */
  cancel(id: string): Promise<Job>;
  /** Calls `fn` with the id of every job that changed (state, stage, counts); returns the unsubscribe. */
  subscribe(fn: (jobId: string) => void): () => void;
  /** Starts running jobs in this process. */
  startWorker(handler: JobHandler): Promise<void>;
  /** Throws when the queue cannot be reached (readiness). */
  probe(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export function jobNotFound(id: string): KildeError {
  return new KildeError('JOB_NOT_FOUND', `No job ${JSON.stringify(id)}`);
}

export function notCancellable(job: Job): KildeError {
  return new KildeError(
    'JOB_NOT_CANCELLABLE',
    `Job ${job.job_id} is ${job.state}; only a queued job can be cancelled`,
  );
}

/** The wait before retry `n` (1-based): `base`, doubling. */
export function backoffMs(base: number, retry: number): number {
  return base * 2 ** Math.max(0, retry - 1);
}
