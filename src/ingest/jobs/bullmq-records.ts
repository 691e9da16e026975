import type { Job as BullJob, JobType } from 'bullmq';
import type {
  IngestSuccessBody,
  JobError,
  JobPayload,
  JobProgress,
  JobRecord,
  JobStage,
  JobState,
} from './job.js';

/*
 * How a BullMQ job and its claim key read as Kilde's job record (`src/ingest/jobs/job.ts`): the
 * state, the progress kept in BullMQ's `progress` field, the result or the failure.
 */

/** What a job keeps in BullMQ's `progress` field: where it is, and its failure code. */
export interface StoredProgress {
  stage: JobStage | null;
  chunks_total: number | null;
  chunks_done: number;
  /** The failure of the last run (retried) or the final one (failed). */
  error?: JobError;
}

/**
 * One run's progress in BullMQ's `progress` field, written in order. Once the run has ended, a stage
 * still reporting (a branch of the pipeline that outlived the failure) is ignored: it would
 * overwrite the stored failure, and the record would lose the failure's code.
 */
export function progressWriter(job: { updateProgress(p: StoredProgress): Promise<void> }) {
  let current: StoredProgress = { stage: null, chunks_total: null, chunks_done: 0 };
  let ended = false;
  let writes = Promise.resolve();
  const save = (p: StoredProgress) => {
    current = p;
    writes = writes.then(
      () => job.updateProgress({ ...p }),
      () => undefined,
    );
    return writes;
  };
  return {
    /** The run's first write (no stage yet); a failure to write it fails the run. */
    start: () => save(current),
    report(p: JobProgress): void {
      if (ended) return;
      void save({
        stage: p.stage,
        chunks_total: p.chunksTotal ?? current.chunks_total,
        chunks_done: p.chunksDone ?? current.chunks_done,
      }).catch(() => undefined);
    },
    /** The run succeeded: later reports are ignored, the writes so far complete. */
    end(): Promise<void> {
      ended = true;
      return writes.catch(() => undefined);
    },
    /** The run failed: the failure is stored, and later reports are ignored. */
    fail(error: JobError): Promise<void> {
      ended = true;
      return save({ ...current, stage: null, error: { ...error, stage: current.stage } }).catch(
        () => undefined,
      );
    },
  };
}

export type Data = JobPayload;
export type Bull = BullJob<Data, IngestSuccessBody, string>;

/** The BullMQ job types that hold jobs of each state (a cancelled one may still sit in the wait list). */
export const STATE_TYPES: Record<JobState, JobType[]> = {
  queued: ['waiting', 'prioritized', 'delayed'],
  running: ['active'],
  done: ['completed'],
  failed: ['failed'],
  cancelled: ['failed', 'waiting', 'prioritized', 'delayed'],
};

/** The job's state from its BullMQ type and its claim (`run:<n>` or `cancel:<ms>`). */
export function stateOf(bull: string, claim: string | null): JobState {
  if (isCancel(claim)) return 'cancelled';
  if (bull === 'active') return 'running';
  if (bull === 'completed') return 'done';
  if (bull === 'failed') return 'failed';
  return 'queued';
}

/** Kilde's record of a BullMQ job in the given state. */
export function recordOf(job: Bull, state: JobState, claim: string | null): JobRecord {
  const p = storedProgress(job.progress);
  const result = state === 'done' ? (job.returnvalue ?? null) : null;
  const failedError: JobError | null =
    state === 'failed'
      ? (p.error ?? { code: 'PIPELINE_FAILED', message: job.failedReason || 'The job failed' })
      : null;
  return {
    id: job.id as string,
    payload: job.data,
    state,
    stage: p.stage,
    createdAt: job.timestamp,
    startedAt: job.processedOn ?? null,
    finishedAt:
      state === 'cancelled'
        ? Number(claim?.slice('cancel:'.length)) || null
        : state === 'done' || state === 'failed'
          ? (job.finishedOn ?? null)
          : null,
    chunksTotal: result ? result.chunks_count : p.chunks_total,
    chunksDone: result ? result.chunks_count : p.chunks_done,
    attempts: job.attemptsStarted ?? job.attemptsMade,
    result,
    error: failedError,
    lastError: state === 'queued' ? (p.error ?? null) : null,
  };
}

/** The claim a cancel took: `cancel:<ms since the epoch>`. */
export function isCancel(claim: string | null): boolean {
  return claim?.startsWith('cancel') === true;
}

function storedProgress(raw: unknown): StoredProgress {
  const p = (typeof raw === 'object' && raw !== null ? raw : {}) as Partial<StoredProgress>;
  return {
    stage: p.stage ?? null,
    chunks_total: typeof p.chunks_total === 'number' ? p.chunks_total : null,
    chunks_done: typeof p.chunks_done === 'number' ? p.chunks_done : 0,
    ...(p.error ? { error: p.error } : {}),
  };
}
