import type { Chunk } from '../chunk/chunker.js';
import { documentSegments } from '../chunk/segments.js';
import type { LexicalOutput } from '../embed/bm25/lexical-stage.js';
import { KildeError } from '../errors.js';
import type { SourceFile } from '../extract/extractor.js';
import type { IndexPoint, SparseVector } from '../index/contract.js';
import type { Lease } from './lock.js';
import { encode } from './pipeline-encode.js';
import { type Extracted, extractFiles } from './pipeline-extract.js';
import {
  DEFAULT_BATCH_CHUNKS,
  DEFAULT_SEGMENT_CHARS,
  type FileOutcome,
  type IngestResult,
  type PassFile,
  type PipelineOptions,
  type PipelineParts,
} from './pipeline-parts.js';
import { chunkAll, shifted } from './pipeline-pieces.js';
import { CHUNK_FAILURE, pointsOf, publish, writeInBatches } from './pipeline-write.js';
import { kept } from './pool-chunk-lexical.js';
import type { IngestTarget } from './request.js';
import {
  cancelled,
  cancelledIf,
  type PipelineProgress,
  type Stage,
  type StageObserver,
  timed,
} from './stages.js';

export * from './pipeline-parts.js';
export { chunkMeta } from './pipeline-write.js';

/** The least characters a pass chunks in two pool tasks rather than one. */
const SPLIT_MIN_CHARS = 32 * 1024;

/**
 * One file through the pipeline: a pass of one (`runPass`), so a lone upload takes the same stages
 * as a file of a shared pass. Runs under the caller's per-file_id lock. A failure deletes only this
 * run's points; an aborted `signal` (the client left) stops the run before its version becomes
 * visible. Under a fenced lease (Redis) the lease is checked before writing and only older versions
 * are retired (src/versions/retire.ts, `retireFenced`).
 */
export async function runPipeline(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  version: string,
  signal?: AbortSignal,
  lease?: Lease,
  options: PipelineOptions = {},
): Promise<IngestResult> {
  const one: PassFile = {
    target,
    file,
    version,
    ...(lease ? { lease } : {}),
    ...(signal ? { signal } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  const [outcome] = await runPass(parts, [one], signal);
  if (!outcome?.ok) throw outcome ? outcome.error : new Error('file was not processed');
  return outcome.result;
}

/**
 * The pipeline: convert → chunk → dense → sparse → write for one or many files (a pass: the local
 * `kilde ingest`, `IngestService.ingestMany`, concurrent uploads coalesced by pass-queue.ts). The
 * files are converted together (`extractFiles`: small ones in a few pool tasks), the small ones are
 * chunked together in one pool task per worker, embedded in one call, analysed together, and their
 * versions are written together, so the index group-commits them after one shared presence read.
 * Every file keeps its own version semantics: its own version id, its own commit (all or nothing,
 * then its older versions retired: src/versions/publish.ts), and a failure anywhere in its path fails only
 * that file, whose previous version stays. A shared stage that fails is retried file by file, so
 * the error lands on the file that caused it. A file larger than one batch (`INGEST_BATCH_CHUNKS`
 * chunks or `INGEST_SEGMENT_CHARS` characters) is written alone in bounded batches
 * (`writeInBatches`). The caller holds every file's lock; `signal` is the whole pass's caller.
 */
export async function runPass(
  parts: PipelineParts,
  files: readonly PassFile[],
  signal?: AbortSignal,
): Promise<FileOutcome[]> {
  const outcomes = new Map<number, FileOutcome>();
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
    const chars = x.stream ? Number.POSITIVE_INFINITY : x.docs.reduce((n, d) => n + d.text.length, 0);
    (chars > segmentChars ? large : small).push(i);
  });

  progress(small, () => ({ stage: 'chunk' }));
  const chunked = new Map<number, Pieces>();
  await sharedStage(
    small,
    fail,
    (ids) => chunkSmall(parts, ids, extracted, segmentChars, chunked),
    (ids) => observeShare(parts.observer, 'chunk', ids.length),
  );

  // Points: a file with no text fails; one with more chunks than a batch is written alone.
  const points = new Map<number, IndexPoint[]>();
  const pointsOfLarge = new Map<number, IndexPoint[]>();
  for (const i of small) {
    const pieces = chunked.get(i);
    if (!pieces) continue;
    const { target, version } = files[i]!;
    const list: IndexPoint[] = [];
    for (const { doc, chunks } of pieces.docs) {
      list.push(...pointsOf(parts, target, version, extracted[i]!.docs[doc]!, chunks, list.length));
    }
    pieces.lexical?.forEach((l, k) => {
      list[k]!.lexical = l.terms;
      if (l.sparse) list[k]!.sparse = l.sparse;
    });
    if (list.length === 0) fail(i, new KildeError('EXTRACTION_FAILED', 'no text could be extracted'));
    else if (list.length > batchChunks) {
      large.push(i);
      pointsOfLarge.set(i, list);
    } else points.set(i, list);
  }

  // Dense and lexical: all the points of the pass in one call each (one file's failure retried alone).
  dropCancelled(points.keys());
  for (const i of points.keys()) if (outcomes.has(i)) points.delete(i);
  await sharedStage([...points.keys()], fail, async (ids) => {
    cancelledIf(signal);
    // Each file's own counts: none done as a stage starts, all once the dense vectors are in.
    const report = (p: PipelineProgress) =>
      progress(ids, (i) => {
        const n = points.get(i)!.length;
        return { stage: p.stage, chunksTotal: n, chunksDone: p.chunksDone ? n : 0 };
      });
    const all = ids.flatMap((i) => points.get(i)!);
    await encode(parts, all, shareObserver(parts.observer, ids.length), signal, { report, done: 0 });
  });

  // Write: every file's own version, started together so the index commits them together.
  const written = [...points.keys()].filter((i) => !outcomes.has(i));
  const started = performance.now();
  await Promise.all(written.map((i) => writeSmall(i)));
  if (written.length > 0) {
    const share = (performance.now() - started) / 1000 / written.length;
    for (const _ of written) parts.observer?.stage('write', share);
  }

  // Large files: each alone, one after another (each holds at most one batch in memory).
  for (const i of large) {
    const f = files[i]!;
    try {
      const result = await writeInBatches(
        parts,
        f.target,
        extracted[i]!,
        f.version,
        f.signal ?? signal,
        f.lease,
        (p) => f.onProgress?.(p),
        pointsOfLarge.get(i),
      );
      outcomes.set(i, { ok: true, result });
    } catch (err) {
      fail(i, err);
    }
  }
  return files.map((_, i) => outcomes.get(i) ?? { ok: false, error: new Error('file was not processed') });

  async function writeSmall(i: number): Promise<void> {
    const f = files[i]!;
    const scope = { fileId: f.target.fileId, collectionName: f.target.collectionName, version: f.version };
    const list = points.get(i)!;
    try {
      cancelledIf(signal);
      cancelledIf(f.signal);
      f.onProgress?.({ stage: 'write', chunksTotal: list.length, chunksDone: list.length });
      // The pass's signal (one caller for all its files) or this file's own caller's.
      await publish(parts, scope, list, 0, f.signal ?? signal, f.lease, undefined);
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
  }
}

/** A small file's chunks per document, and when analysed with them, its points' lexical side in order. */
interface Pieces {
  docs: Array<{ doc: number; chunks: Chunk[] }>;
  lexical?: Array<{ terms: string; sparse?: SparseVector }>;
}

/**
 * The chunk stage of a pass's small files: every document one segment, in two tasks of about
 * equal size (two pool workers) once there is enough text to share; a few small files are one
 * task, so a small job starts one worker (each costs ≈0.3 s of CPU to start). With
 * `parts.chunkLexical` each task analyses the chunks too (their `sparse` stage, observed here).
 */
async function chunkSmall(
  parts: PipelineParts,
  ids: readonly number[],
  extracted: ReadonlyArray<Extracted | undefined>,
  segmentChars: number,
  chunked: Map<number, Pieces>,
): Promise<void> {
  const inputs = ids.flatMap((i) =>
    extracted[i]!.docs.flatMap((d, doc) =>
      [...documentSegments(d.text, d.pages, segmentChars)].map(({ segment, input }) => ({
        file: i,
        doc,
        offset: segment.start,
        input,
        title: d.metadata.title,
        languages: d.metadata.languages,
      })),
    ),
  );
  const chars = inputs.reduce((n, x) => n + x.input.text.length, 0);
  const halves = splitBySize(inputs, (x) => x.input.text.length, chars >= SPLIT_MIN_CHARS ? 2 : 1);
  const { chunkLexical } = parts;
  const results = await timed(undefined, 'chunk', CHUNK_FAILURE, () =>
    Promise.all(
      halves.map(async (h): Promise<{ chunks: Chunk[][]; lexical?: LexicalOutput; seconds?: number }> => {
        if (!chunkLexical)
          return {
            chunks: await chunkAll(
              parts.chunker,
              h.map((x) => x.input),
            ),
          };
        const docs = h.map(({ input, title, languages }) => ({
          input,
          ...(title ? { title } : {}),
          languages: [...languages],
        }));
        const out = await chunkLexical(docs);
        return { chunks: out.chunks, lexical: out.lexical, seconds: out.analyseSeconds };
      }),
    ),
  );
  const analysed = results.every((r) => r.lexical !== undefined);
  const byFile = new Map<number, Pieces>();
  halves.forEach((h, k) => {
    const r = results[k]!;
    let next = 0;
    h.forEach((x, j) => {
      const chunks = (r.chunks[j] ?? []).map((c) => shifted(c, x.offset));
      const pieces = byFile.get(x.file) ?? { docs: [], ...(analysed ? { lexical: [] } : {}) };
      pieces.docs.push({ doc: x.doc, chunks });
      for (const c of chunks) {
        if (!kept(c) || !pieces.lexical) continue;
        const sparse = r.lexical!.sparse?.[next];
        pieces.lexical.push({ terms: r.lexical!.lexical[next]!, ...(sparse ? { sparse } : {}) });
        next += 1;
      }
      byFile.set(x.file, pieces);
    });
  });
  if (analysed) {
    // The analysis's time is the sparse stage's, each file's share (as a shared encode observes it).
    const seconds = results.reduce((n, r) => n + (r.seconds ?? 0), 0);
    for (let k = 0; k < ids.length; k++) parts.observer?.stage('sparse', seconds / ids.length);
  }
  for (const i of ids) chunked.set(i, byFile.get(i) ?? { docs: [] });
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
