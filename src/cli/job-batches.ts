import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { contentHash } from '../embedded/content-hash.js';
import { fileIdFor } from '../index/identifiers.js';
import type { BatchFile, JobBatch } from '../ingest/jobs/batch.js';
import type { JobIngestOptions, Manifest } from './job-ingest.js';
import type { FoundFile } from './walk.js';

/* `kilde ingest <paths> --url …` in job batches (`POST /api/v1/job-batches`). */

/** Most files, and about the most bytes, of one batch request (a larger file goes alone). */
const BATCH_FILES = 256;
const BATCH_BYTES = 64 << 20;
/** A file up to this size is read into memory once, hashed and sent from there ... */
const IN_MEMORY = 1 << 20;
/** ... while a slice's files in memory stay under this. */
const SLICE_MEMORY = 32 << 20;

interface Planned {
  file: FoundFile;
  fileId: string;
  sha256: string;
  bytes: number;
  started: number;
  /** The file's bytes, read once to hash and send (a small file). */
  data?: Buffer;
}

/**
 * The batch path: files unchanged since a done run are skipped, those of batches still running are
 * followed, the rest submitted in batches (one request in flight while earlier ones run) and
 * followed; each file recorded as it settles. Answers the files left to one job each: those of an
 * older manifest's single jobs, and all of them when the server has no batches.
 */
export async function inBatches(
  o: JobIngestOptions,
  manifest: Manifest,
  saveSoon: () => void,
  onSkip: () => void,
): Promise<FoundFile[]> {
  const singles: FoundFile[] = [];
  /**
   * Planned in slices of a batch's size, each submitted before the next is read and hashed. A small
   * file is read once: hashed, and sent from the same bytes (while the slice's stay under
   * `SLICE_MEMORY`); a larger one is hashed as it streams and read again as it is sent.
   */
  const plan = async (file: FoundFile, held: { bytes: number }): Promise<Planned> => {
    const base = { file, fileId: fileIdFor(o.collection, file.relative), started: performance.now() };
    // The walk's size; the bytes read decide (the file may have changed since).
    if (file.bytes <= IN_MEMORY && held.bytes + file.bytes <= SLICE_MEMORY) {
      held.bytes += file.bytes;
      const data = readSmall(file.path);
      if (data) {
        return { ...base, bytes: data.length, data, sha256: createHash('sha256').update(data).digest('hex') };
      }
    }
    const bytes = await stat(file.path).then(
      (st) => st.size,
      () => 0,
    );
    return { ...base, bytes, sha256: await contentHash(file.path).catch(() => '') };
  };
  const recordFile = (p: Planned, batchId: string, f: BatchFile | undefined) => {
    const base = {
      file: p.file.relative,
      file_id: f?.file_id ?? p.fileId,
      ms: Math.round(performance.now() - p.started),
      job_id: batchId,
    };
    if (f?.state === 'done') {
      manifest.files[p.fileId] = { sha256: p.sha256, job_id: batchId, index: f.index, done: true };
      saveSoon();
      o.record({ ...base, ok: true, chunks: f.result?.chunks_count ?? 0 });
    } else {
      o.record({
        ...base,
        ok: false,
        chunks: 0,
        error: f?.error?.message ?? 'the batch ended without this file',
        code: f?.error?.code ?? 'FAILED',
      });
    }
  };
  /** Follows a batch to its end, recording its files (by their place in it) as each settles. */
  const watch = async (batchId: string, files: (Planned & { index: number })[], first?: JobBatch) => {
    for (const p of files) delete p.data;
    const byIndex = new Map(files.map((p) => [p.index, p]));
    const settle = (f: BatchFile) => {
      const p = byIndex.get(f.index);
      if (!p) return;
      if (f.state === 'running' || f.state === 'queued') {
        o.stage(p.file.relative, f.state);
        return;
      }
      byIndex.delete(f.index);
      recordFile(p, batchId, f);
    };
    for (const f of first?.files ?? []) if (f.state === 'failed') settle(f);
    try {
      const end = await o.client.watchBatch(batchId, settle, o.signal);
      for (const f of end.files) settle(f);
    } catch (err) {
      if (o.signal.aborted) return;
      failAll(o, byIndex.values(), err);
      byIndex.clear();
    }
    for (const p of byIndex.values()) recordFile(p, batchId, undefined);
  };
  const watching: Promise<void>[] = [];
  const known = new Map<string, Promise<JobBatch | undefined>>();
  let noBatches = false;
  // The next slice is read and hashed while this one's request is sent.
  const planSlice = (at: number) => {
    const held = { bytes: 0 };
    return mapLimited(o.files.slice(at, at + BATCH_FILES), 32, (f) => plan(f, held));
  };
  let next = planSlice(0);
  for (let at = 0; at < o.files.length && !o.signal.aborted; at += BATCH_FILES) {
    const planned = await next;
    next = planSlice(at + BATCH_FILES);
    if (noBatches) {
      singles.push(...planned.map((p) => p.file));
      continue;
    }
    const submit: Planned[] = [];
    const follow = new Map<string, (Planned & { index: number })[]>();
    for (const p of planned) {
      const seen = o.force ? undefined : manifest.files[p.fileId];
      if (seen?.sha256 === p.sha256 && p.sha256 !== '' && seen.done) {
        onSkip();
        o.record({
          file: p.file.relative,
          file_id: p.fileId,
          ok: true,
          chunks: 0,
          ms: 0,
          skipped: true,
          job_id: seen.job_id,
        });
      } else if (seen?.sha256 === p.sha256 && seen.index !== undefined) {
        follow.set(seen.job_id, [...(follow.get(seen.job_id) ?? []), { ...p, index: seen.index }]);
      } else if (seen?.sha256 === p.sha256 && p.sha256 !== '') singles.push(p.file);
      else submit.push(p);
    }
    for (const [batchId, files] of follow) {
      if (!known.has(batchId))
        known.set(
          batchId,
          o.client.getBatch(batchId).catch(() => undefined),
        );
      const now = await known.get(batchId);
      // A file that failed there is submitted again, as one whose batch the server no longer knows.
      const again = files.filter((p) => {
        const state = now?.files[p.index]?.state;
        return state === undefined || state === 'failed';
      });
      submit.push(...again);
      const rest = files.filter((p) => !again.includes(p));
      if (now && rest.length > 0) watching.push(watch(batchId, rest, now));
    }
    const groups: Planned[][] = [];
    let bytes = 0;
    for (const p of submit) {
      const last = groups.at(-1);
      if (last && last.length < BATCH_FILES && bytes + p.bytes <= BATCH_BYTES) {
        last.push(p);
        bytes += p.bytes;
      } else {
        groups.push([p]);
        bytes = p.bytes;
      }
    }
    for (const [g, group] of groups.entries()) {
      if (o.signal.aborted) break;
      let batch: JobBatch | undefined;
      try {
        batch = await o.client.submitBatch(
          group.map((p) => ({ ...argsOf(o, p.file, p.fileId), ...(p.data ? { data: p.data } : {}) })),
        );
      } catch (err) {
        if (o.signal.aborted) break;
        failAll(o, group, err);
        continue;
      }
      if (!batch) {
        // A server without batches: one job per file for what is left.
        noBatches = true;
        singles.push(...groups.slice(g).flatMap((rest) => rest.map((p) => p.file)));
        break;
      }
      const id = batch.batch_id;
      group.forEach((p, index) => {
        manifest.files[p.fileId] = { sha256: p.sha256, job_id: id, index, done: false };
      });
      saveSoon();
      watching.push(
        watch(
          id,
          group.map((p, index) => ({ ...p, index })),
          batch,
        ),
      );
    }
  }
  await Promise.all(watching);
  return singles;
}

/**
 * A small file's bytes, read synchronously (one open, read and close, no round trips through the
 * thread pool: most of the client's reading cost for thousands of small files), or undefined when
 * it cannot be read now or has grown past `IN_MEMORY` (it is then read as a large file, and fails there).
 */
function readSmall(path: string): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    if (size > IN_MEMORY) return undefined;
    const data = Buffer.allocUnsafe(size);
    let n = 0;
    for (let got = 1; n < size && got > 0; n += got) got = readSync(fd, data, n, size - n, null);
    return n === size ? data : data.subarray(0, n);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Records each of `files` as failed with `err` (its message and code). */
function failAll(o: JobIngestOptions, files: Iterable<Planned>, err: unknown): void {
  const e = err as { message?: unknown; code?: unknown };
  for (const p of files) {
    o.record({
      file: p.file.relative,
      file_id: p.fileId,
      ok: false,
      chunks: 0,
      ms: Math.round(performance.now() - p.started),
      error: String(e.message ?? err),
      ...(typeof e.code === 'string' ? { code: e.code } : {}),
    });
  }
}

/** What one file is sent as (`IngestArgs`), named by its path as the local CLI names it. */
export function argsOf(o: Pick<JobIngestOptions, 'collection' | 'userId'>, file: FoundFile, fileId: string) {
  return {
    path: file.path,
    fileId,
    filename: file.path.split(/[\\/]/).at(-1) ?? file.relative,
    collection: o.collection,
    userId: o.userId,
    source: file.relative,
    legacy: file.legacy,
  };
}

/** `fn` over `items`, at most `limit` at a time, results in order. */
async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
