import { ERRORS, type ErrorCode, type ErrorVariant, KildeError, variantFor } from '../errors.js';
import { inSpan, otelApi, tracingActive } from '../telemetry/tracing.js';

/*
 * What every stage of an ingest shares: the stage names, the observer that times them, the
 * progress a running ingest reports, the error mapping of a failed stage and the cancellation check.
 */

/** Pipeline stages in the order they run; `fetch` is the object-storage download before them. */
export type Stage = 'fetch' | 'convert' | 'chunk' | 'dense' | 'sparse' | 'write';

export interface StageObserver {
  stage(stage: Stage, seconds: number): void;
  /** One `auto` routing decision: the engine chosen and the signal that decided. */
  route?(engine: string, signal: string): void;
}

/**
 * What a running ingest reports to its caller (a job's progress): the stage it enters and, once the
 * file is chunked, how many chunks there are and how many have passed the embedding stages.
 */
export interface PipelineProgress {
  stage: Stage;
  chunksTotal?: number;
  chunksDone?: number;
}

/**
 * What a stage's failure answers: its code (the table gives the status) and the message for the log;
 * `variant` only where the code's default status is not the stage's (EXTRACTION_FAILED's `crashed`:
 * a conversion that threw answers 500, not the 422 of an unreadable file).
 */
export interface StageFailure {
  code: ErrorCode;
  message: string;
  variant?: ErrorVariant;
}

/** Times `fn` as one stage and turns whatever it throws into that stage's error code. */
export async function timed<T>(
  observer: StageObserver | undefined,
  stage: Stage,
  failure: StageFailure,
  fn: () => Promise<T> | T,
): Promise<T> {
  const started = performance.now();
  const run = async () => {
    try {
      return await fn();
    } catch (err) {
      throw asStageError(err, failure);
    }
  };
  try {
    return await inStage(stage, run);
  } finally {
    observer?.stage(stage, (performance.now() - started) / 1000);
  }
}

/** The context key of the stage being spanned (what the API's `createContextKey` makes of the name). */
const STAGE = Symbol.for('kilde.ingest.stage');

/**
 * With tracing on, `fn` as the span of one stage (`kilde.ingest.convert`...), a child of the
 * file's; a step of the stage already being spanned (the check whether to stream a file, inside its
 * convert) adds no span of its own. With tracing off, `fn()`.
 */
export function inStage<T>(stage: Stage, fn: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return fn();
  const { context } = otelApi();
  if (context.active().getValue(STAGE) === stage) return fn();
  return inSpan(`kilde.ingest.${stage}`, {}, () => context.with(context.active().setValue(STAGE, stage), fn));
}

/** What `timed` makes of an error thrown in a stage (exported for stages that settle many files). */
export function asStageError(err: unknown, f: StageFailure): KildeError {
  if (err instanceof KildeError) {
    // Gating errors (413 on a download) pass unchanged.
    if (err.code === 'INVALID_REQUEST') return err;
    // The per-file_id lease (Redis) was lost or unreachable: say so, whichever stage found out.
    if (err.code === 'LOCK_FAILED') return err;
    if (err.code === f.code) return err;
    // A document over an extraction limit (hit while reading, chunking or encoding it in the
    // worker pool) says so, whichever stage found out.
    if (err.code === 'EXTRACTION_FAILED' && err.statusCode === 422) return err;
    // Another stage's code becomes this stage's; a 5xx keeps its message for the log and DEBUG (the
    // kernel shows clients the code's public message), a 4xx is about the caller's file and stays.
    // Its status carries over where this stage's code answers it too (a 504 stays a 504).
    const variant =
      err.statusCode === ERRORS[f.code].status
        ? undefined
        : (variantFor(f.code, err.statusCode) ?? f.variant);
    return new KildeError(f.code, err.message, {
      variant,
      cause: err,
      expose: err.exposed,
      retryable: err.retryable,
      ...(err.detail === undefined ? {} : { detail: err.detail }),
    });
  }
  return new KildeError(f.code, f.message, { cause: err, variant: f.variant });
}

/** The error of an ingest whose client went away before its version was committed. */
export function cancelledIf(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw cancelled();
}

export function cancelled(): KildeError {
  return new KildeError('INVALID_REQUEST', 'The client closed the request; nothing was committed', {
    variant: 'clientClosed',
  });
}

/** `{ signal }` when there is one (for options objects under exactOptionalPropertyTypes). */
export function opt(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}

/** The span of a version's commit (its last batch written, the version made visible, older ones retired). */
export const publishSpan = 'kilde.ingest.publish';

export function publishAttributes(
  scope: { fileId: string; collectionName: string; version: string },
  chunks: number,
): Record<string, string | number> {
  return {
    'kilde.file_id': scope.fileId,
    'kilde.collection': scope.collectionName,
    'kilde.ingest.version': scope.version,
    'kilde.chunks.count': chunks,
  };
}
