import { access, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KildeError } from '../../errors.js';
import type { BuiltPipeline } from '../build.js';
import { tooLarge } from '../byte-limit.js';
import type { ObjectStore } from '../object-store.js';
import { type Stage, type StageObserver, timed } from '../pipeline.js';
import { successBody } from '../success-body.js';
import { sourcePath, withTempDir } from '../temp-dir.js';
import type { JobHandler, JobPayload, JobStage } from './job.js';

/** `JOBS_SPOOL_DIR`, default `kilde-jobs` in the temp dir. */
export function spoolRoot(configured: string | undefined): string {
  return configured ?? join(tmpdir(), 'kilde-jobs');
}

/** A fresh folder for one upload: `<root>/<id>/`. */
export async function spoolDir(root: string, id: string): Promise<string> {
  const dir = join(root, id);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Removes a job's spooled upload (its whole folder); object-store jobs hold nothing. */
export async function releaseSpool(payload: JobPayload): Promise<void> {
  if (payload.source.kind !== 'spool') return;
  await rm(dirname(payload.source.path), { recursive: true, force: true });
}

const WIRE_STAGE: Record<Stage, JobStage> = {
  fetch: 'fetch',
  convert: 'convert',
  chunk: 'chunk',
  dense: 'embed',
  sparse: 'sparse',
  write: 'write',
};

export interface RunnerDeps {
  pipeline: () => BuiltPipeline;
  objectStore: ObjectStore;
  maxBytes: number;
  observer?: StageObserver;
}

/**
 * Runs a job exactly as `PUT /api/v1/ingest` runs a request: the same IngestService (lock,
 * versioning, pipeline), the object fetched under the lock; its answer is the job's result.
 */
export function createJobRunner(deps: RunnerDeps): JobHandler {
  return async (payload, ctx) => {
    const { service } = deps.pipeline();
    const { target, source } = payload;
    const onProgress = (p: { stage: Stage; chunksTotal?: number; chunksDone?: number }) =>
      ctx.progress({
        stage: WIRE_STAGE[p.stage],
        ...(p.chunksTotal === undefined ? {} : { chunksTotal: p.chunksTotal }),
        ...(p.chunksDone === undefined ? {} : { chunksDone: p.chunksDone }),
      });
    if (source.kind === 'spool') {
      ctx.progress({ stage: 'upload' });
      await access(source.path).catch(() => {
        throw new KildeError(
          'PIPELINE_FAILED',
          'The uploaded file of this job is not in JOBS_SPOOL_DIR on this worker: workers on other machines need the same folder (a shared volume), or submit jobs as S3 references',
          { expose: true },
        );
      });
      const outcome = await service.ingest(
        target,
        async () => ({
          path: source.path,
          bytes: source.bytes,
          filename: target.filename,
          ...(source.mimeType ? { mimeType: source.mimeType } : {}),
        }),
        ctx.signal,
        { onProgress },
      );
      return successBody(outcome);
    }
    ctx.progress({ stage: 'fetch' });
    const head = await timed(
      deps.observer,
      'fetch',
      { code: 'OBJECT_FETCH_FAILED', status: 502, message: 'Fetching the object failed' },
      () => deps.objectStore.head(source.bucket, source.key),
    );
    if (head.bytes > deps.maxBytes) throw tooLarge(deps.maxBytes);
    const outcome = await withTempDir((dir) =>
      service.ingest(
        target,
        () =>
          timed(
            deps.observer,
            'fetch',
            { code: 'OBJECT_FETCH_FAILED', status: 502, message: 'Fetching the object failed' },
            async () => {
              const path = sourcePath(dir, target.filename);
              const bytes = await deps.objectStore.download(source.bucket, source.key, path, deps.maxBytes);
              return {
                path,
                bytes,
                filename: target.filename,
                ...(head.contentType && head.contentType !== 'application/octet-stream'
                  ? { mimeType: head.contentType }
                  : {}),
              };
            },
          ),
        ctx.signal,
        { onProgress },
      ),
    );
    return successBody(outcome);
  };
}
