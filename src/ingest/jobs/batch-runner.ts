import { access } from 'node:fs/promises';
import { KildeError } from '../../errors.js';
import { packRuns } from '../../pack.js';
import { inSpan } from '../../telemetry/tracing.js';
import type { BuiltPipeline } from '../build.js';
import { DEFAULT_PASS_FILES, PASS_BYTES } from '../pass-queue.js';
import { successBody } from '../success-body.js';
import type { BatchEntry, BatchHandler } from './batch.js';
import { jobErrorOf, retryableJobFailure } from './job.js';

/** Passes of one batch in flight: one converts while the other writes, as the local `kilde ingest`. */
const PASSES_IN_FLIGHT = 2;

/**
 * The batch's files to run as pipeline passes: consecutive files, at most `DEFAULT_PASS_FILES` and
 * about `PASS_BYTES` per pass, a larger file alone (the local `kilde ingest`'s rule, src/cli/passes.ts).
 */
export function batchPasses(entries: readonly BatchEntry[], todo: readonly number[]): number[][] {
  return packRuns(todo, (i) => entries[i]!.bytes ?? 0, {
    maxWeight: PASS_BYTES,
    maxItems: DEFAULT_PASS_FILES,
  });
}

/**
 * Runs a batch's unsettled files through `IngestService.ingestMany`, the passes the local CLI uses:
 * each file a new version of its file_id as `PUT /api/v1/ingest` would make it, each settling on its
 * own. A file failing retryably (embedding 429, index unreachable) is queued again and the run
 * throws, so the queue retries the batch (its settled files are not run again).
 */
export function createBatchRunner(deps: { pipeline: () => BuiltPipeline }): BatchHandler {
  return (payload, ctx) =>
    inSpan(
      'kilde.ingest.batch',
      { 'kilde.collection': payload.collectionName, 'kilde.batch.files': payload.files.length },
      async () => {
        const { service } = deps.pipeline();
        const todo = payload.files.flatMap((e, i) => {
          const f = ctx.files[i];
          return e.target && (f?.state === 'queued' || f?.state === 'running') ? [i] : [];
        });
        const passes = batchPasses(payload.files, todo);
        let retryable: unknown;
        const runPass = async (pass: number[]) => {
          for (const i of pass) ctx.report(i, { state: 'running', result: null, error: null });
          const settled = await service.ingestMany(
            pass.map((i) => {
              const e = payload.files[i]!;
              const target = e.target!;
              return {
                target,
                load: async () => {
                  // Kept in memory by this process (batch-held.ts): read from there.
                  if (e.data) {
                    return {
                      path: '',
                      data: e.data,
                      bytes: e.data.length,
                      filename: target.filename,
                      ...(e.mimeType ? { mimeType: e.mimeType } : {}),
                    };
                  }
                  await access(e.path ?? '').catch(() => {
                    throw new KildeError(
                      'PIPELINE_FAILED',
                      'The uploaded file of this batch is not in JOBS_SPOOL_DIR on this worker: workers on other machines need the same folder (a shared volume)',
                      { expose: true },
                    );
                  });
                  return {
                    path: e.path ?? '',
                    bytes: e.bytes ?? 0,
                    filename: target.filename,
                    ...(e.mimeType ? { mimeType: e.mimeType } : {}),
                  };
                },
              };
            }),
            ctx.signal,
          );
          settled.forEach((s, k) => {
            const i = pass[k]!;
            if (s.status === 'fulfilled') {
              ctx.report(i, { state: 'done', result: successBody(s.value), error: null });
            } else if (retryableJobFailure(s.reason) || ctx.signal.aborted) {
              retryable ??= s.reason;
              ctx.report(i, { state: 'queued', result: null, error: jobErrorOf(s.reason) });
            } else {
              ctx.report(i, { state: 'failed', result: null, error: jobErrorOf(s.reason) });
            }
          });
        };
        let next = 0;
        const worker = async () => {
          for (let p = next++; p < passes.length && !ctx.signal.aborted; p = next++)
            await runPass(passes[p]!);
        };
        await Promise.all(Array.from({ length: Math.min(PASSES_IN_FLIGHT, passes.length) }, worker));
        if (retryable !== undefined) throw retryable;
        // Stopped by a shutdown: the queue runs what is left again (BullMQ: another worker, or this one restarted).
        if (ctx.signal.aborted) throw new Error('the worker shut down during the batch');
      },
    );
}
