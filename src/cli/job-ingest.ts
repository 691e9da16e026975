import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { contentHash } from '../embedded/content-hash.js';
import { fileIdFor } from '../index/identifiers.js';
import { argsOf, inBatches } from './job-batches.js';
import type { JobClient } from './job-client.js';
import type { FileOutcome } from './progress.js';
import type { FoundFile } from './walk.js';

/**
 * `kilde ingest <paths> --url …`: the files in job batches (many per request, run in the server's
 * pipeline passes), each batch followed through its events; one job per file on a server without
 * batches. A manifest in the data directory remembers each file's content hash and job or batch, per
 * server and collection, so a run stopped half-way (Ctrl-C) resumes: files done with the same content
 * are skipped, jobs and batches still queued or running on the server are followed again instead of
 * being submitted twice.
 */
const manifestSchema = z.object({
  url: z.string(),
  collection: z.string(),
  files: z.record(
    z.string(),
    z.object({
      sha256: z.string(),
      /** The job, or the batch, that ingests this content. */
      job_id: z.string(),
      /** Submitted in a job batch (`job_id` is the batch's id): the file's place in it. */
      index: z.number().int().optional(),
      done: z.boolean(),
    }),
  ),
});
export type Manifest = z.infer<typeof manifestSchema>;

export function manifestPath(dataDir: string, url: string, collection: string): string {
  const key = createHash('sha256').update(`${url}\n${collection}`).digest('hex').slice(0, 16);
  return join(dataDir, 'cli-jobs', `${key}.json`);
}

async function readManifest(path: string, url: string, collection: string): Promise<Manifest> {
  const empty: Manifest = { url, collection, files: {} };
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return empty;
  try {
    const m = manifestSchema.parse(JSON.parse(text));
    return m.url === url && m.collection === collection ? m : empty;
  } catch {
    return empty;
  }
}

export interface JobIngestOptions {
  client: JobClient;
  files: readonly FoundFile[];
  collection: string;
  userId: string;
  url: string;
  manifest: string;
  /** Re-ingest files the manifest says are done. */
  force: boolean;
  concurrency: number;
  record: (o: FileOutcome & { skipped?: boolean; job_id?: string }) => void;
  /** A file's state or a running job's stage, for the progress bar. */
  stage: (file: string, status: string) => void;
  signal: AbortSignal;
}

export async function ingestWithJobs(o: JobIngestOptions): Promise<{ skipped: number }> {
  const manifest = await readManifest(o.manifest, o.url, o.collection);
  let skipped = 0;
  // Writes are atomic (rename), so an interrupted run leaves a whole manifest, and coalesced, at
  // most one per MANIFEST_GAP_MS: one write per file rewrote a growing manifest 2000 times for 1000
  // files. Files do not wait for them: the manifest only saves work on a rerun (a job it does not
  // know yet is submitted again, one not marked done is asked about), so the last write, at the
  // end of the run (after Ctrl-C too), is the one whose error counts.
  const save = coalesced(
    async () => {
      await mkdir(dirname(o.manifest), { recursive: true });
      const tmp = `${o.manifest}.${process.pid}.tmp`;
      await writeFile(tmp, `${JSON.stringify(manifest)}\n`);
      await rename(tmp, o.manifest);
    },
    { gapMs: MANIFEST_GAP_MS },
  );
  const saveSoon = () => {
    save().catch(() => undefined);
  };

  async function one(file: FoundFile): Promise<void> {
    const fileId = fileIdFor(o.collection, file.relative);
    const started = performance.now();
    const base = { file: file.relative, file_id: fileId };
    const ms = () => Math.round(performance.now() - started);
    try {
      const sha256 = await contentHash(file.path);
      const known = manifest.files[fileId];
      if (!o.force && known?.sha256 === sha256 && known.done) {
        skipped += 1;
        o.record({ ...base, ok: true, chunks: 0, ms: ms(), skipped: true, job_id: known.job_id });
        return;
      }
      // A job of this content submitted by an interrupted run: follow it rather than submit again.
      let job = !o.force && known?.sha256 === sha256 ? await o.client.get(known.job_id) : undefined;
      if (!job || job.state === 'failed' || job.state === 'cancelled') {
        job = await o.client.submit(argsOf(o, file, fileId));
        manifest.files[fileId] = { sha256, job_id: job.job_id, done: false };
        saveSoon();
      }
      const end = await o.client.watch(
        job.job_id,
        (j) => o.stage(file.relative, j.state === 'running' ? (j.stage ?? 'running') : j.state),
        o.signal,
      );
      if (end.state === 'done') {
        manifest.files[fileId] = { sha256, job_id: end.job_id, done: true };
        saveSoon();
        o.record({
          ...base,
          file_id: end.file_id,
          ok: true,
          chunks: end.result?.chunks_count ?? 0,
          ms: ms(),
          job_id: end.job_id,
        });
        return;
      }
      o.record({
        ...base,
        ok: false,
        chunks: 0,
        ms: ms(),
        job_id: end.job_id,
        error: end.error?.message ?? `job ${end.state}`,
        code: end.error?.code ?? (end.state === 'cancelled' ? 'CANCELLED' : 'FAILED'),
      });
    } catch (err) {
      if (o.signal.aborted) return;
      const e = err as { message?: unknown; code?: unknown };
      o.record({
        ...base,
        ok: false,
        chunks: 0,
        ms: ms(),
        error: String(e.message ?? err),
        ...(typeof e.code === 'string' ? { code: e.code } : {}),
      });
    }
  }

  const singles = await inBatches(o, manifest, saveSoon, () => {
    skipped += 1;
  });
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < singles.length && !o.signal.aborted; i = next++) await one(singles[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, singles.length) }, worker));
  await save();
  return { skipped };
}

/** The least time between two manifest writes of `kilde ingest --url`. */
const MANIFEST_GAP_MS = 250;

/**
 * `write` run one at a time, the calls made while one runs (or waits) sharing the next: each call
 * resolves after a run that started after it was made (so that run saw its change), and a failed
 * run fails the calls that shared it. With `gapMs`, a run starts no sooner than that after the one
 * before it started (`wait` sleeps; tests pass their own). `settled()` waits for whatever is
 * running or due.
 */
export function coalesced(
  write: () => Promise<void>,
  o: { gapMs?: number; wait?: (ms: number) => Promise<void> } = {},
): (() => Promise<void>) & { settled(): Promise<void> } {
  const gapMs = o.gapMs ?? 0;
  const wait = o.wait ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let last: Promise<void> = Promise.resolve();
  let next: Promise<void> | undefined;
  let lastStart = Number.NEGATIVE_INFINITY;
  const start = async () => {
    const due = lastStart + gapMs - performance.now();
    if (due > 0) await wait(due);
    next = undefined;
    lastStart = performance.now();
    return write();
  };
  const call = () => {
    if (!next) {
      const run = last.then(start, start);
      next = run;
      last = run;
    }
    return next;
  };
  return Object.assign(call, {
    settled: () =>
      last.then(
        () => undefined,
        () => undefined,
      ),
  });
}

/** `EXTRACTION_FAILED ×3, EMBEDDING_FAILED ×1`: the failures of a run by code, most frequent first. */
export function failuresByCode(failures: readonly { code?: string }[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const f of failures) counts.set(f.code ?? 'ERROR', (counts.get(f.code ?? 'ERROR') ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}
