import { access, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KildeError } from '../../errors.js';
import { inSpan } from '../../telemetry/tracing.js';
import type { BuiltPipeline } from '../build.js';
import { tooLarge } from '../byte-limit.js';
import type { ObjectStore } from '../object-store.js';
import { type Stage, type StageObserver, timed } from '../stages.js';
import { successBody } from '../success-body.js';
import { isAlive, sourcePath, withTempDir } from '../temp-dir.js';
import type { BatchEntry } from './batch.js';
import { releaseHeld } from './batch-held.js';
import type { JobHandler, JobPayload, JobQueue, JobStage } from './job.js';

/** `JOBS_SPOOL_DIR`, default `kilde-jobs` in the temp dir. */
export function spoolRoot(configured: string | undefined): string {
  return configured ?? join(tmpdir(), 'kilde-jobs');
}

/**
 * A fresh folder for the upload of job `id`: `<root>/<pid>-<id>/`. The job id lets a sweep ask the
 * queue whether the job still needs it; the process id, whether the process receiving or (on the
 * in-process queue) holding it is still there.
 */
export async function spoolDir(root: string, id: string): Promise<string> {
  const dir = join(root, `${process.pid}-${id}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

export interface SpoolSweep {
  /** Is this process id alive on this machine (default: `kill(pid, 0)`). */
  alive?: (pid: number) => boolean;
  /** Milliseconds since the epoch (the clock). */
  now: number;
  /** A folder younger than this may be an upload still arriving on another machine. */
  graceMs: number;
}

/**
 * Removes spooled uploads nothing will read: their job ended (done, failed, cancelled) or is
 * unknown to the queue — the in-process queue forgets its jobs when its process goes, and a crash
 * can skip the removal at the end of a job. Kept: folders of jobs still queued or running, those
 * of other live processes on this machine that the queue does not know yet (an upload arriving),
 * and, on Redis, any written to within `graceMs` (a shared spool volume: the receiving process may
 * be on another machine).
 * Returns the folder names it removed.
 */
export async function sweepSpool(
  root: string,
  queue: Pick<JobQueue, 'kind'> & { get(id: string): Promise<{ state: string } | undefined> },
  o: SpoolSweep,
): Promise<string[]> {
  const alive = o.alive ?? isAlive;
  const names = await readdir(root).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    const m = /^(\d+)-(.+)$/.exec(name);
    if (!m) continue;
    const [pid, id] = [Number(m[1]), m[2] as string];
    const job = await queue.get(id);
    if (job && (job.state === 'queued' || job.state === 'running')) continue;
    // A job the queue does not know: an upload another live process here is receiving, or (a
    // shared volume) one still being written elsewhere; otherwise nothing will read it.
    if (!job && pid !== process.pid && alive(pid)) continue;
    if (!job && queue.kind === 'redis' && o.now - (await lastWritten(join(root, name))) < o.graceMs) continue;
    await rm(join(root, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/** The newest modification time of a folder and the files in it (an upload grows its file). */
async function lastWritten(dir: string): Promise<number> {
  const entries = await readdir(dir).catch(() => [] as string[]);
  const times = await Promise.all(
    [dir, ...entries.map((e) => join(dir, e))].map((p) =>
      stat(p).then(
        (s) => s.mtimeMs,
        () => 0,
      ),
    ),
  );
  return Math.max(0, ...times);
}

/** Removes a job batch's uploads: its spool folder, and those it kept in memory. */
export async function releaseBatchSpool(payload: {
  dir: string;
  files: readonly BatchEntry[];
}): Promise<void> {
  releaseHeld(payload.files);
  await rm(payload.dir, { recursive: true, force: true });
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
  // With tracing on, a job is a trace of its own (it runs apart from the request that queued it).
  const traced: JobHandler = (payload, ctx) =>
    inSpan(
      'kilde.ingest.job',
      { 'kilde.file_id': payload.target.fileId, 'kilde.collection': payload.target.collectionName },
      () => run(payload, ctx),
    );
  const run: JobHandler = async (payload, ctx) => {
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
      { code: 'OBJECT_FETCH_FAILED', message: 'Fetching the object failed' },
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
            { code: 'OBJECT_FETCH_FAILED', message: 'Fetching the object failed' },
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
  return traced;
}
