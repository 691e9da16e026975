import { z } from 'zod';
import type { IngestTarget } from '../request.js';
import { type IngestSuccessBody, ingestSuccessSchema, type JobError } from './job.js';

/*
 * Job batches (`POST /api/v1/job-batches`): many files in one multipart request, queued as one
 * entry and run in the pipeline passes the local `kilde ingest` uses (many files per extraction
 * task, embedding call and commit), followed through one event stream. Each file settles on its
 * own: a bad file fails alone, the others are ingested. docs/scaling.md, "Job batches".
 */

/** A batch's life: queued (also while it waits to be retried) → running → done | failed. */
export const BATCH_STATES = ['queued', 'running', 'done', 'failed'] as const;
export type BatchState = (typeof BATCH_STATES)[number];

/** A file of a batch: queued → running → done | failed. */
export const BATCH_FILE_STATES = ['queued', 'running', 'done', 'failed'] as const;
export type BatchFileState = (typeof BATCH_FILE_STATES)[number];

/** One file of a batch as its submit left it: a spooled upload to run, or refused at the door. */
export interface BatchEntry {
  /** The file's name (the entry's `filename`, else its part's). */
  name: string;
  /** The file_id it is (or would have been) ingested under; '' when the request named none. */
  fileId: string;
  /** Absent when the file was refused at submit (`error`). */
  target?: IngestTarget;
  /** Where it was spooled; absent when it is kept in memory (`data`). */
  path?: string;
  /**
   * The whole file, kept in memory by the in-process queue (batch-receive.ts, `HELD_BYTES`); never
   * in a batch on BullMQ, whose payload is stored in Redis.
   */
  data?: Buffer;
  bytes?: number;
  mimeType?: string;
  /** Why the file was refused at submit (its fields, its name, its size): it fails alone. */
  error?: JobError;
}

/** What a batch is asked to do: its files, in the order they were sent, and their spool folder. */
export interface BatchPayload {
  collectionName: string;
  /** The batch's spool folder: every uploaded file of it is under it. */
  dir: string;
  files: BatchEntry[];
}

/** A file's outcome so far. */
export interface BatchFileRecord {
  state: BatchFileState;
  result: IngestSuccessBody | null;
  error: JobError | null;
}

/** A batch as both queues keep it, before it is written on the wire. */
export interface BatchRecord {
  id: string;
  payload: BatchPayload;
  state: BatchState;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  attempts: number;
  files: BatchFileRecord[];
  /** The failure that ended the batch (its files still unsettled failed with it). */
  error: JobError | null;
  /** The failure of the last run while the batch waits to be retried. */
  lastError: JobError | null;
}

const jobErrorSchema = z.object({ code: z.string(), message: z.string() });

export const batchFileSchema = z.object({
  index: z.number().int(),
  file_id: z.string(),
  name: z.string(),
  state: z.enum(BATCH_FILE_STATES),
  result: ingestSuccessSchema.nullable(),
  error: jobErrorSchema.nullable(),
});
export type BatchFile = z.infer<typeof batchFileSchema>;

/** `JobBatch` on the wire, snake_case like `Job`. */
export const batchSchema = z.object({
  batch_id: z.string(),
  state: z.enum(BATCH_STATES),
  collection_name: z.string(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  attempts: z.number().int(),
  counts: z.object({
    files: z.number().int(),
    queued: z.number().int(),
    running: z.number().int(),
    done: z.number().int(),
    failed: z.number().int(),
  }),
  error: jobErrorSchema.nullable(),
  last_error: jobErrorSchema.nullable(),
  files: z.array(batchFileSchema),
});
export type JobBatch = z.infer<typeof batchSchema>;

const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function fileToWire(r: BatchRecord, index: number): BatchFile {
  const entry = r.payload.files[index]!;
  const f = r.files[index]!;
  return {
    index,
    file_id: entry.target?.fileId ?? entry.fileId,
    name: entry.name,
    state: f.state,
    result: f.result,
    error: f.error,
  };
}

export function batchToWire(r: BatchRecord): JobBatch {
  const counts = { files: r.files.length, queued: 0, running: 0, done: 0, failed: 0 };
  for (const f of r.files) counts[f.state] += 1;
  return {
    batch_id: r.id,
    state: r.state,
    collection_name: r.payload.collectionName,
    created_at: at(r.createdAt) ?? new Date(0).toISOString(),
    started_at: at(r.startedAt),
    finished_at: at(r.finishedAt),
    attempts: r.attempts,
    counts,
    error: r.error,
    last_error: r.state === 'queued' ? r.lastError : null,
    files: r.files.map((_, i) => fileToWire(r, i)),
  };
}

/** The files' records a new batch starts with: those refused at submit have failed already. */
export function initialFiles(payload: BatchPayload): BatchFileRecord[] {
  return payload.files.map((e) =>
    e.error
      ? { state: 'failed', result: null, error: e.error }
      : { state: 'queued', result: null, error: null },
  );
}

export const isBatchTerminal = (s: BatchState) => s === 'done' || s === 'failed';

export interface BatchContext {
  batchId: string;
  /** 1 on the first run. */
  attempt: number;
  /** Aborted when the worker shuts down. */
  signal: AbortSignal;
  /** The files' records as earlier runs left them: a settled file is not run again. */
  files: readonly BatchFileRecord[];
  /** A file's new record (running, done, failed; queued again when its failure is retried). */
  report(index: number, file: BatchFileRecord): void;
}

/**
 * Runs a batch's unsettled files. It resolves once each has settled or failed retryably; it throws
 * (retryably) when files are left to retry, so the queue runs the batch again after its back-off.
 */
export type BatchHandler = (payload: BatchPayload, ctx: BatchContext) => Promise<void>;

/**
 * The queue of batches: in process (gone with it) or BullMQ on Redis (`REDIS_URL`, durable: a batch
 * whose worker died is run again by another, from the files it had not finished).
 */
export interface BatchQueue {
  readonly kind: 'redis' | 'memory';
  submit(payload: BatchPayload, id: string): Promise<JobBatch>;
  get(id: string): Promise<JobBatch | undefined>;
  /** Calls `fn` with the id of every batch that changed; returns the unsubscribe. */
  subscribe(fn: (batchId: string) => void): () => void;
  startWorker(handler: BatchHandler): Promise<void>;
  probe(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** Files of a batch that are neither done nor failed. */
export const unsettled = (files: readonly BatchFileRecord[]) =>
  files.filter((f) => f.state === 'queued' || f.state === 'running').length;
