import type { Chunk } from '../chunk/chunker.js';
import { documentSegments } from '../chunk/segments.js';
import { KildeError } from '../errors.js';
import type { SourceFile } from '../extract/extractor.js';
import { type IndexPoint, pointId } from '../index/contract.js';
import { inSpan } from '../telemetry/tracing.js';
import type { Lease } from './lock.js';
import {
  chunkMeta,
  commitOptions,
  DEFAULT_BATCH_CHUNKS,
  DEFAULT_SEGMENT_CHARS,
  extractFiles,
  type IngestResult,
  type PipelineOptions,
  type PipelineParts,
  writeExtracted,
} from './pipeline.js';
import { encode } from './pipeline-encode.js';
import { chunkAll, shifted } from './pipeline-pieces.js';
import type { IngestTarget } from './request.js';
import {
  cancelled,
  cancelledIf,
  type PipelineProgress,
  publishAttributes,
  publishSpan,
  type Stage,
  type StageObserver,
  timed,
} from './stages.js';
import type { VersionScope } from '../versions/ledger.js';
import { commitVersion } from '../versions/publish.js';

/*
 * One pipeline pass over many small files (`IngestService.ingestMany`, the local `kilde ingest`):
 * each file keeps its own version and its own error, the shared stages run once for all.
 */

/** The least characters a pass chunks in two pool tasks rather than one. */
const SPLIT_MIN_CHARS = 32 * 1024;

/** One file of a pipeline pass over many (`runPipelineBatch`): as `runPipeline` takes it. */
export interface BatchFile {
  target: IngestTarget;
  file: SourceFile;
  version: string;
  lease?: Lease;
  /** This file's caller going away (a pass of concurrent requests): fails this file alone. */
  signal?: AbortSignal;
  /** This file's progress (a job's): the stage each shared stage enters, and its chunk counts. */
  onProgress?: PipelineOptions['onProgress'];
}

/** One file's outcome in a pass: its result, or the error its own `runPipeline` would have thrown. */
export type BatchOutcome = { ok: true; result: IngestResult } | { ok: false; error: unknown };

/**
 * Many files through one pipeline pass: the files are converted together (`extractFiles`: small
 * ones in a few pool tasks), then the small ones are chunked together in one pool task per worker,
 * embedded in one call, analysed together, and their versions are written together, so the index
 * group-commits them into one merge-insert (lancedb-batch.ts) after one shared presence read. Every file keeps
 * its own version semantics: its own version id, its own `writeVersion` (all or nothing), and a
 * failure anywhere in its path fails only that file, whose previous version stays. A shared stage
 * that fails is retried file by file, so the error lands on the file that caused it. A file larger
 * than one batch (`INGEST_BATCH_CHUNKS` chunks or `INGEST_SEGMENT_CHARS` characters) goes through
 * `runPipeline`'s bounded batches alone. The caller holds every file's lock.
 */
export async function runPipelineBatch(
  parts: PipelineParts,
  files: readonly BatchFile[],
  signal?: AbortSignal,
): Promise<BatchOutcome[]> {
  const outcomes = new Map<number, BatchOutcome>();
  const fail = (i: number, error: unknown) => {
    outcomes.set(i, { ok: false, error });
  };
  /** Fails the files whose own caller went away; the others go on. */
  const dropCancelled = (ids: Iterable<number>) => {
    for (const i of ids) if (!outcomes.has(i) && files[i]!.signal?.aborted) fail(i, cancelled());
  };
  const progress = (ids: Iterable<number>, p: (i: number) => PipelineProgress) => {
    for (const i of ids) if (!outcomes.has(i)) files[i]!.onProgress?.(p(i));
  };
  progress(files.keys(), () => ({ stage: 'convert' }));
  const segmentChars = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
  const batchChunks = Math.max(1, parts.batchChunks ?? DEFAULT_BATCH_CHUNKS);
  const extracted = (await extractFiles(parts, files, signal)).map((r, i) => {
    if (r.status === 'fulfilled') return r.value;
    fail(i, r.reason);
    return undefined;
  });
  dropCancelled(files.keys());
  // Small files share the rest of the pass; a large one is written alone, in its bounded batches.
  const small: number[] = [];
  const large: number[] = [];
  extracted.forEach((x, i) => {
    if (!x || outcomes.has(i)) return;
    if (x.stream) {
      large.push(i);
      return;
    }
    const chars = x.docs.reduce((n, d) => n + d.text.length, 0);
    (chars > segmentChars ? large : small).push(i);
  });

  // Chunk: every small file's documents, in two tasks of about equal size (two pool workers).
  progress(small, () => ({ stage: 'chunk' }));
  const chunked = new Map<number, Array<{ doc: number; chunks: Chunk[] }>>();
  await sharedStage(
    small,
    fail,
    async (ids) => {
      // The same inputs `runPipeline` gives the chunker: each document is one segment here.
      const inputs = ids.flatMap((i) =>
        extracted[i]!.docs.flatMap((d, doc) =>
          [...documentSegments(d.text, d.pages, segmentChars)].map(({ segment, input }) => ({
            file: i,
            doc,
            offset: segment.start,
            input,
          })),
        ),
      );
      // Two tasks (two pool workers) once there is enough text to share: a few small files are one
      // task, so a small job starts one worker (each costs ≈0.3 s of CPU to start).
      const chars = inputs.reduce((n, x) => n + x.input.text.length, 0);
      const halves = splitBySize(inputs, (x) => x.input.text.length, chars >= SPLIT_MIN_CHARS ? 2 : 1);
      const results = await timed(
        undefined,
        'chunk',
        { code: 'PIPELINE_FAILED', message: 'Chunking failed' },
        () =>
          Promise.all(
            halves.map((h) =>
              chunkAll(
                parts.chunker,
                h.map((x) => x.input),
              ),
            ),
          ),
      );
      const flat = results.flat();
      const byFile = new Map<number, Array<{ doc: number; chunks: Chunk[] }>>();
      halves.flat().forEach((x, k) => {
        const chunks = (flat[k] ?? []).map((c) => shifted(c, x.offset));
        byFile.set(x.file, [...(byFile.get(x.file) ?? []), { doc: x.doc, chunks }]);
      });
      for (const i of ids) chunked.set(i, byFile.get(i) ?? []);
    },
    (ids) => observeShare(parts.observer, 'chunk', ids.length),
  );

  // Points: a file with no text fails as alone; one with more chunks than a batch is written alone.
  const points = new Map<number, IndexPoint[]>();
  for (const i of small) {
    const x = extracted[i]!;
    const f = files[i]!;
    const pieces = chunked.get(i);
    if (!pieces) continue;
    const list: IndexPoint[] = [];
    for (const { doc, chunks } of pieces) {
      for (const chunk of chunks) {
        if (chunk.content.trim() === '') continue;
        list.push({
          id: pointId(f.target.fileId, f.version, list.length),
          content: chunk.content,
          meta: chunkMeta(f.target, x.docs[doc]!, chunk, list.length, f.version, parts.extractor.name),
        });
      }
    }
    if (list.length === 0) fail(i, new KildeError('EXTRACTION_FAILED', 'no text could be extracted'));
    else if (list.length > batchChunks) large.push(i);
    else points.set(i, list);
  }

  // Dense and lexical: all the points of the pass in one call each (one file's failure retried alone).
  dropCancelled(points.keys());
  for (const i of points.keys()) if (outcomes.has(i)) points.delete(i);
  progress(points.keys(), (i) => ({
    stage: parts.dense ? 'dense' : 'sparse',
    chunksTotal: points.get(i)!.length,
    chunksDone: 0,
  }));
  await sharedStage([...points.keys()], fail, async (ids) => {
    cancelledIf(signal);
    const all = ids.flatMap((i) => points.get(i)!);
    await encode(parts, all, shareObserver(parts.observer, ids.length), signal, {
      report: () => undefined,
      done: 0,
    });
  });

  // Write: every file's own version, started together so the index commits them together.
  const written = [...points.keys()].filter((i) => !outcomes.has(i));
  const started = performance.now();
  await Promise.all(
    written.map(async (i) => {
      const f = files[i]!;
      const scope: VersionScope = {
        fileId: f.target.fileId,
        collectionName: f.target.collectionName,
        version: f.version,
      };
      const list = points.get(i)!;
      // The pass's signal (one caller for all its files) or this file's own caller's.
      const own = f.signal ?? signal;
      try {
        cancelledIf(signal);
        cancelledIf(f.signal);
        f.onProgress?.({ stage: 'write', chunksTotal: list.length, chunksDone: list.length });
        await timed(
          undefined,
          'write',
          { code: 'VECTORDB_WRITE_FAILED', message: 'Writing to the vector index failed' },
          async () => {
            try {
              await inSpan(publishSpan, publishAttributes(scope, list.length), () =>
                commitVersion(parts.index, scope, list, commitOptions(parts, own, f.lease)),
              );
            } catch (err) {
              cancelledIf(own);
              throw err;
            }
          },
        );
        outcomes.set(i, {
          ok: true,
          result: {
            collectionName: f.target.collectionName,
            chunksCount: list.length,
            ingestVersion: f.version,
            extraction: extracted[i]!.extraction,
          },
        });
      } catch (err) {
        fail(i, err);
      }
    }),
  );
  if (written.length > 0) {
    const share = (performance.now() - started) / 1000 / written.length;
    for (const _ of written) parts.observer?.stage('write', share);
  }

  // Large files: each alone, one after another (each holds at most one batch in memory).
  for (const i of large) {
    const f = files[i]!;
    try {
      const result = await writeExtracted(
        parts,
        f.target,
        extracted[i]!,
        f.version,
        f.signal ?? signal,
        f.lease,
        (p) => f.onProgress?.(p),
      );
      outcomes.set(i, { ok: true, result });
    } catch (err) {
      fail(i, err);
    }
  }
  return files.map((_, i) => outcomes.get(i) ?? { ok: false, error: new Error('file was not processed') });
}

/**
 * Runs a stage over several files at once; should it fail, runs it again file by file, so each
 * error lands on the file that caused it and the others go on.
 */
async function sharedStage(
  ids: readonly number[],
  fail: (i: number, error: unknown) => void,
  run: (ids: readonly number[]) => Promise<void>,
  observe?: (ids: readonly number[]) => { done(seconds: number): void },
): Promise<void> {
  if (ids.length === 0) return;
  const started = performance.now();
  try {
    await run(ids);
    observe?.(ids).done((performance.now() - started) / 1000);
    return;
  } catch (err) {
    if (ids.length === 1) {
      fail(ids[0]!, err);
      return;
    }
  }
  for (const i of ids) {
    try {
      await run([i]);
    } catch (err) {
      fail(i, err);
    }
  }
}

/** A shared stage's time, reported once per file as that file's share (the sums stay true). */
function observeShare(observer: StageObserver | undefined, stage: Stage, files: number) {
  return {
    done(seconds: number) {
      for (let k = 0; k < files; k++) observer?.stage(stage, seconds / files);
    },
  };
}

function shareObserver(observer: StageObserver | undefined, files: number): StageObserver {
  return {
    stage(stage, seconds) {
      for (let k = 0; k < files; k++) observer?.stage(stage, seconds / files);
    },
  };
}

/** Cuts `items` into at most `n` runs of consecutive items of about equal total size (none empty). */
function splitBySize<T>(items: readonly T[], size: (t: T) => number, n: number): T[][] {
  const total = items.reduce((s, t) => s + size(t), 0);
  const out: T[][] = [[]];
  let acc = 0;
  for (const t of items) {
    const current = out.at(-1)!;
    if (current.length > 0 && out.length < n && acc >= (total * out.length) / n) out.push([t]);
    else current.push(t);
    acc += size(t);
  }
  return out;
}
