import type { Logger } from 'pino';
import type { Chunk, Chunker } from '../chunk/chunker.js';
import type { Heading } from '../chunk/markdown-sections.js';
import { headingsAfter } from '../chunk/markdown-sections.js';
import type { BatchChunker } from '../chunk/pooled-chunker.js';
import { type ChunkInput, cutPoint, documentSegments } from '../chunk/segments.js';
import { type Bm25Language, contextualText, lexicalLanguageOf } from '../embed/bm25/analysis.js';
import type { LexicalStage } from '../embed/bm25/lexical-stage.js';
import type { DenseEmbedder } from '../embed/dense.js';
import { ERRORS, type ErrorCode, KildeError } from '../errors.js';
import type { ExtractedDocument, Extractor, SourceFile, StreamedText } from '../extract/extractor.js';
import { dropTableOfContents } from '../extract/page-furniture.js';
import { type ChunkMeta, type IndexPoint, pointId } from '../index/contract.js';
import type { VectorIndex } from '../index/store.js';
import type { Lease } from './lock.js';
import type { IngestTarget } from './request.js';
import type { VersionScope } from './version-ledger.js';
import { commitVersion, discardVersion, stageBatch } from './versioning.js';

/** Pipeline stages in the order they run; `fetch` is the object-storage download before them. */
export type Stage = 'fetch' | 'convert' | 'chunk' | 'dense' | 'sparse' | 'write';

export interface StageObserver {
  stage(stage: Stage, seconds: number): void;
  /** One `auto` routing decision: the engine chosen and the signal that decided. */
  route?(engine: string, signal: string): void;
}

/** The stages, built once at start-up and reused by every request. */
export interface PipelineParts {
  extractor: Extractor;
  /** A `BatchChunker` runs in the worker pool (services); a plain `Chunker` in this thread (tests). */
  chunker: Chunker | BatchChunker;
  /** Absent in lexical-only mode (`EMBEDDING_PROVIDER=none`): points carry no dense vector. */
  dense?: DenseEmbedder;
  /**
   * Every chunk's lexical side (analysed terms; BM25 vectors when ENABLE_SPARSE_EMBEDDINGS is on);
   * services analyse in the worker pool.
   */
  lexical: LexicalStage;
  /** `SPARSE_LANGUAGE`: the analysis language of documents whose detected languages Kilde cannot stem. */
  fallbackLanguage: Bm25Language;
  index: VectorIndex;
  log: Logger;
  observer?: StageObserver;
  /** Clock of the version ledger (ms since the epoch); tests inject one. Default `Date.now`. */
  now?: () => number;
  /** `KEEP_VERSIONS`: retired versions kept per file and collection (versioning.ts). Default 0. */
  keepVersions?: number;
  /**
   * Most chunks embedded, encoded and written at a time (`INGEST_BATCH_CHUNKS`): a larger file is
   * written in staged batches and made visible as a whole after the last. Default 1000.
   */
  batchChunks?: number;
  /** Most characters chunked at a time (`INGEST_SEGMENT_CHARS`); a longer document is cut (segments.ts). */
  segmentChars?: number;
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

export interface PipelineOptions {
  /** Called when a stage starts and when chunk counts change; it must not throw. */
  onProgress?: (progress: PipelineProgress) => void;
}

export const DEFAULT_BATCH_CHUNKS = 1000;
export const DEFAULT_SEGMENT_CHARS = 1_000_000;

export interface IngestResult {
  collectionName: string;
  chunksCount: number;
  ingestVersion: string;
  /** The engine and profile actually used; with `auto`, the route and the signal that decided it. */
  extraction: { engine: string; profile: string | null; route?: string; signal?: string };
}

/** Times `fn` as one stage and turns whatever it throws into that stage's error code. */
export async function timed<T>(
  observer: StageObserver | undefined,
  stage: Stage,
  failure: { code: ErrorCode; status: number; message: string },
  fn: () => Promise<T> | T,
): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } catch (err) {
    throw asStageError(err, failure);
  } finally {
    observer?.stage(stage, (performance.now() - started) / 1000);
  }
}

function asStageError(err: unknown, f: { code: ErrorCode; status: number; message: string }): KildeError {
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
    const allowed: readonly number[] = ERRORS[f.code].statuses;
    return new KildeError(f.code, err.message, {
      status: allowed.includes(err.statusCode) ? err.statusCode : f.status,
      cause: err,
      expose: err.exposed,
      retryable: err.retryable,
      ...(err.detail === undefined ? {} : { detail: err.detail }),
    });
  }
  return new KildeError(f.code, f.status, f.message, { cause: err });
}

/**
 * convert → chunk → dense → sparse → write (the new version becomes visible as a whole, then the
 * other versions are retired: versioning.ts). Runs under the caller's per-file_id lock. A failure
 * deletes only this run's points; an aborted `signal` (the client left) stops the run before its
 * version becomes visible. Under a fenced lease (Redis) the lease is checked before writing and
 * only older versions are retired (version-retire.ts, `retireFenced`).
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
  const report = options.onProgress ?? (() => undefined);
  report({ stage: 'convert' });
  const extracted = await extractFile(parts, target, file, signal);
  return writeExtracted(parts, target, extracted, version, signal, lease, report);
}

/** A file as the convert stage left it: its documents (page furniture dropped) and how it was read. */
export interface Extracted {
  docs: ExtractedDocument[];
  extraction: IngestResult['extraction'];
  /** A large plain-text file read as a stream: its one document's text (`docs[0].text` is empty). */
  stream?: StreamedText;
}

/** The convert stage of one file. */
async function extractFile(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  signal: AbortSignal | undefined,
): Promise<Extracted> {
  const failure = { code: 'EXTRACTION_FAILED', status: 500, message: 'Extraction failed' } as const;
  // One convert observation per file, whichever way it was read.
  const started = performance.now();
  let docs: ExtractedDocument[];
  try {
    // A plain-text file larger than one segment is streamed: its text is never held whole.
    const { openText } = parts.extractor;
    if (openText) {
      const minBytes = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
      const stream = await timed(undefined, 'convert', failure, () =>
        openText.call(parts.extractor, file, { minBytes, ...opt(signal) }),
      );
      if (stream) {
        parts.log.debug({ fileId: target.fileId }, 'plain text streamed (not held whole)');
        cancelledIf(signal);
        return { docs: [stream.doc], extraction: { engine: parts.extractor.name, profile: null }, stream };
      }
    }
    docs = await timed(undefined, 'convert', failure, () =>
      parts.extractor.extract(file, { fileId: target.fileId, ...opt(signal) }),
    );
  } finally {
    parts.observer?.stage('convert', (performance.now() - started) / 1000);
  }
  cancelledIf(signal);
  const engine = docs.find((d) => d.extractor)?.extractor ?? parts.extractor.name;
  const profile = docs.find((d) => d.vision_profile)?.vision_profile ?? null;
  const routing = docs.find((d) => d.routing)?.routing;
  return {
    // Page furniture (table-of-contents lines) goes before chunking, whichever engine extracted.
    docs: docs.map(dropTableOfContents),
    extraction: { engine, profile, ...(routing ? { route: routing.route, signal: routing.signal } : {}) },
  };
}

/** chunk → dense → sparse → write of one extracted file, in bounded batches (see `runPipeline`). */
async function writeExtracted(
  parts: PipelineParts,
  target: IngestTarget,
  extracted: Extracted,
  version: string,
  signal: AbortSignal | undefined,
  lease: Lease | undefined,
  report: (progress: PipelineProgress) => void,
): Promise<IngestResult> {
  const { observer, log } = parts;
  report({ stage: 'chunk' });
  const clean = extracted.docs;
  // A file written in several batches reports each stage once, its time summed over the batches.
  const times = new Map<Stage, number>();
  const summed: StageObserver = { stage: (stage, s) => times.set(stage, (times.get(stage) ?? 0) + s) };
  try {
    return await writeBatches();
  } finally {
    for (const [stage, s] of times) observer?.stage(stage, s);
  }

  async function writeBatches(): Promise<IngestResult> {
    const scope: VersionScope = { fileId: target.fileId, collectionName: target.collectionName, version };
    const commit = commitOptions(parts, signal, lease);
    const batchChunks = Math.max(1, parts.batchChunks ?? DEFAULT_BATCH_CHUNKS);
    let pending: IndexPoint[] = [];
    let staged = 0;
    let splitId = 0;
    // Chunks that have passed the embedding stages, for the progress report; the total is known
    // once the last batch is reached (a file written in one batch knows it at once).
    const tally: Tally = { report, done: 0 };
    try {
      const segmentChars = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
      const groups = extracted.stream
        ? streamedGroups(extracted.stream, segmentChars, signal)
        : chunkGroups(clean, segmentChars);
      for await (const group of groups) {
        const chunked = await timed(
          summed,
          'chunk',
          { code: 'PIPELINE_FAILED', status: 500, message: 'Chunking failed' },
          () =>
            chunkAll(
              parts.chunker,
              group.map((g) => g.input),
            ),
        );
        group.forEach((g, i) => {
          for (const chunk of chunked[i] ?? []) {
            if (chunk.content.trim() === '') continue;
            const at = shifted(chunk, g.offset);
            pending.push({
              id: pointId(target.fileId, version, splitId),
              content: at.content,
              meta: chunkMeta(target, clean[g.doc]!, at, splitId, version, parts.extractor.name),
            });
            splitId += 1;
          }
        });
        cancelledIf(signal);
        // A batch is written ahead (staged, invisible) only when more chunks follow it: a file that
        // fits in one batch is written in one step, as a whole.
        while (pending.length > batchChunks) {
          const batch = pending.slice(0, batchChunks);
          pending = pending.slice(batchChunks);
          await encode(parts, batch, summed, signal, tally);
          await timed(
            summed,
            'write',
            { code: 'VECTORDB_WRITE_FAILED', status: 502, message: 'Writing to the vector index failed' },
            () => stageBatch(parts.index, scope, batch, staged, commit),
          );
          staged += batch.length;
          cancelledIf(signal);
        }
      }
      if (staged + pending.length === 0) {
        throw new KildeError('EXTRACTION_FAILED', 422, 'no text could be extracted');
      }
      // The last batch: the total is known now.
      tally.total = staged + pending.length;
      await encode(parts, pending, summed, signal, tally);
    } catch (err) {
      // Batches already staged are this run's alone: they go, the previous version stays.
      if (staged > 0) await discardVersion(parts.index, scope, log);
      throw err;
    }

    cancelledIf(signal);
    const chunksCount = staged + pending.length;
    report({ stage: 'write', chunksTotal: chunksCount, chunksDone: chunksCount });
    await timed(
      summed,
      'write',
      { code: 'VECTORDB_WRITE_FAILED', status: 502, message: 'Writing to the vector index failed' },
      async () => {
        try {
          await commitVersion(parts.index, scope, pending, commit, staged);
        } catch (err) {
          // Aborted before the version became visible: nothing of it stays, the previous one does.
          cancelledIf(signal);
          throw err;
        }
      },
    );
    return {
      collectionName: target.collectionName,
      chunksCount,
      ingestVersion: version,
      extraction: extracted.extraction,
    };
  }
}

function commitOptions(parts: PipelineParts, signal: AbortSignal | undefined, lease: Lease | undefined) {
  return {
    log: parts.log,
    now: parts.now ?? Date.now,
    ...opt(signal),
    ...(lease ? { lease } : {}),
    keep: parts.keepVersions ?? 0,
  };
}

/** One file of a pipeline pass over many (`runPipelineBatch`): as `runPipeline` takes it. */
export interface BatchFile {
  target: IngestTarget;
  file: SourceFile;
  version: string;
  lease?: Lease;
}

/** One file's outcome in a pass: its result, or the error its own `runPipeline` would have thrown. */
export type BatchOutcome = { ok: true; result: IngestResult } | { ok: false; error: unknown };

/**
 * Many files through one pipeline pass: each file is converted on its own (the pool runs two at a
 * time), then the small ones are chunked together in one pool task per worker, embedded in one
 * call, analysed together, and their versions are written together, so the index group-commits
 * them into one merge-insert (lancedb-batch.ts) after one shared presence read. Every file keeps
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
  const segmentChars = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
  const batchChunks = Math.max(1, parts.batchChunks ?? DEFAULT_BATCH_CHUNKS);
  const extracted = await Promise.all(
    files.map((f, i) =>
      extractFile(parts, f.target, f.file, signal).catch((err: unknown) => {
        fail(i, err);
        return undefined;
      }),
    ),
  );
  // Small files share the rest of the pass; a large one is written alone, in its bounded batches.
  const small: number[] = [];
  const large: number[] = [];
  extracted.forEach((x, i) => {
    if (!x) return;
    if (x.stream) {
      large.push(i);
      return;
    }
    const chars = x.docs.reduce((n, d) => n + d.text.length, 0);
    (chars > segmentChars ? large : small).push(i);
  });

  // Chunk: every small file's documents, split in two tasks of about equal size (two pool workers).
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
      const halves = splitBySize(inputs, (x) => x.input.text.length, 2);
      const results = await timed(
        undefined,
        'chunk',
        { code: 'PIPELINE_FAILED', status: 500, message: 'Chunking failed' },
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
    if (list.length === 0) fail(i, new KildeError('EXTRACTION_FAILED', 422, 'no text could be extracted'));
    else if (list.length > batchChunks) large.push(i);
    else points.set(i, list);
  }

  // Dense and lexical: all the points of the pass in one call each (one file's failure retried alone).
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
      try {
        cancelledIf(signal);
        await timed(
          undefined,
          'write',
          { code: 'VECTORDB_WRITE_FAILED', status: 502, message: 'Writing to the vector index failed' },
          async () => {
            try {
              await commitVersion(parts.index, scope, list, commitOptions(parts, signal, f.lease));
            } catch (err) {
              cancelledIf(signal);
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
        signal,
        f.lease,
        () => undefined,
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

/** Progress through the embedding stages of a file's batches (see `PipelineProgress`). */
interface Tally {
  report: (progress: PipelineProgress) => void;
  done: number;
  total?: number;
}

/** Dense vectors and the lexical side of one batch of points, set on the points. */
async function encode(
  parts: PipelineParts,
  points: IndexPoint[],
  observer: StageObserver,
  signal: AbortSignal | undefined,
  tally: Tally,
) {
  if (points.length === 0) return;
  const counts = (done: number) => ({
    ...(tally.total === undefined ? {} : { chunksTotal: tally.total }),
    chunksDone: done,
  });
  const { dense } = parts;
  const texts = points.map((p) => p.content);
  if (dense) {
    tally.report({ stage: 'dense', ...counts(tally.done) });
    const vectors = await timed(
      observer,
      'dense',
      { code: 'EMBEDDING_FAILED', status: 502, message: 'Embedding failed' },
      async () => {
        const v = await dense.embedDocuments(texts, signal);
        if (v.length !== texts.length)
          throw new Error(`embedder returned ${v.length} vectors for ${texts.length} texts`);
        return v;
      },
    );
    points.forEach((p, i) => {
      p.dense = vectors[i]!;
    });
    cancelledIf(signal);
  }
  // The lexical side of each chunk: its contextual header and text, in its document's language.
  const items = points.map((p) => ({
    text: contextualText(p.content, p.meta),
    language: lexicalLanguageOf(p.meta.languages, parts.fallbackLanguage, p.content),
  }));
  // Embedded chunks count as done; in lexical-only mode they are done once analysed.
  tally.report({ stage: 'sparse', ...counts(tally.done + (dense ? points.length : 0)) });
  const lexical = await timed(
    observer,
    'sparse',
    { code: 'SPARSE_EMBEDDING_FAILED', status: 500, message: 'Sparse embedding failed' },
    () => parts.lexical.analyse(items),
  );
  points.forEach((p, i) => {
    p.lexical = lexical.lexical[i]!;
    const vector = lexical.sparse?.[i];
    if (vector) p.sparse = vector;
  });
  tally.done += points.length;
}

/** One segment to chunk: which document, where in it, and what the chunker gets. */
interface Piece {
  doc: number;
  offset: number;
  input: ChunkInput;
}

/**
 * The documents' segments (src/chunk/segments.ts) in groups of at most `segmentChars` characters:
 * the short documents of a file are chunked in one call, a long one a segment at a time.
 */
function* chunkGroups(docs: readonly ExtractedDocument[], segmentChars: number): Generator<Piece[]> {
  let group: Piece[] = [];
  let chars = 0;
  for (const [doc, d] of docs.entries()) {
    for (const { segment, input } of documentSegments(d.text, d.pages, segmentChars)) {
      const size = segment.end - segment.start;
      if (group.length > 0 && chars + size > segmentChars) {
        yield group;
        group = [];
        chars = 0;
      }
      group.push({ doc, offset: segment.start, input });
      chars += size;
    }
  }
  if (group.length > 0) yield group;
}

/**
 * A streamed text's segments (one document), as `chunkGroups` cuts a whole one: pieces are
 * gathered until more than `segmentChars` are held, then one segment is cut where `segmentSpans`
 * would cut it (segments.ts). Page furniture is dropped per segment (a table-of-contents line cut
 * by a segment boundary is judged in two halves: the one difference from a text held whole).
 */
async function* streamedGroups(
  stream: StreamedText,
  segmentChars: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<Piece[]> {
  let held = '';
  let offset = 0;
  let outer: Heading[] = [];
  const segment = (raw: string): Piece[] => {
    const text = dropTableOfContents({ ...stream.doc, text: raw }).text;
    const piece: Piece = { doc: 0, offset, input: { text, ...(outer.length > 0 ? { outer } : {}) } };
    outer = headingsAfter(text, 0, text.length, outer);
    offset += text.length;
    return [piece];
  };
  for await (const piece of stream.pieces(signal)) {
    held += piece;
    while (held.length > segmentChars) {
      const end = cutPoint(held, 0, segmentChars);
      const raw = held.slice(0, end);
      held = held.slice(end);
      yield segment(raw);
    }
  }
  if (held.length > 0) yield segment(held);
}

/** A segment's chunk with its offsets moved into the whole document. */
function shifted(chunk: Chunk, offset: number): Chunk {
  if (offset === 0) return chunk;
  return { ...chunk, char_start: chunk.char_start + offset, char_end: chunk.char_end + offset };
}

/** The error of an ingest whose client went away before its version was committed. */
export function cancelledIf(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new KildeError('INVALID_REQUEST', 499, 'The client closed the request; nothing was committed');
  }
}

function chunkAll(chunker: Chunker | BatchChunker, inputs: readonly ChunkInput[]) {
  return 'chunkAll' in chunker
    ? chunker.chunkAll(inputs)
    : inputs.map(({ outer, ...doc }) =>
        chunker.chunk({ ...doc, metadata: { languages: [], mime_type: '' } }, outer),
      );
}

function opt(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}

/** `meta` in the Haystack layout the reference deployment writes, so indexes it built stay readable (docs/architecture.md, "Stored point"). */
export function chunkMeta(
  target: IngestTarget,
  doc: ExtractedDocument,
  chunk: Chunk,
  splitId: number,
  version: string,
  engine: string,
): ChunkMeta {
  const md = doc.metadata;
  const meta: ChunkMeta = {
    collection_name: target.collectionName,
    collection_type: target.collectionType,
    file_id: target.fileId,
    ingest_version: version,
    split_id: splitId,
    name: target.filename,
    source: target.source,
    user_id: target.userId,
    char_start: chunk.char_start,
    char_end: chunk.char_end,
    extraction_engine: doc.extractor ?? engine,
  };
  if (chunk.headers && chunk.headers.length > 0) meta.headers = [...chunk.headers];
  if (chunk.pages && chunk.pages.length > 0) {
    // `page` 0-based for Open WebUI's citation links; `page_number`/`pages` as people count pages.
    meta.page = chunk.pages[0]! - 1;
    meta.page_number = chunk.pages[0]!;
    meta.pages = [...chunk.pages];
  }
  if (md.title) meta.title = md.title;
  if (md.subject) meta.subject = md.subject;
  if (md.authors && md.authors.length > 0) meta.authors = [...md.authors];
  if (md.created_at) meta.created_at = md.created_at;
  if (md.languages.length > 0) meta.languages = [...md.languages];
  if (doc.extractor) meta.extractor = doc.extractor;
  if (doc.vision_profile !== undefined) meta.vision_profile = doc.vision_profile;
  return meta;
}
