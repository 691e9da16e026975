import type { Logger } from 'pino';
import type { Chunk, Chunker } from '../chunk/chunker.js';
import type { BatchChunker } from '../chunk/pooled-chunker.js';
import type { Bm25Language } from '../embed/bm25/analysis.js';
import type { LexicalStage } from '../embed/bm25/lexical-stage.js';
import type { DenseEmbedder } from '../embed/dense.js';
import { KildeError } from '../errors.js';
import type { ExtractedDocument, Extractor, SourceFile, StreamedText } from '../extract/extractor.js';
import { joinDocumentLineHyphens } from '../extract/line-hyphens.js';
import { dropTableOfContents } from '../extract/page-furniture.js';
import { type ChunkMeta, type IndexPoint, pointId } from '../index/contract.js';
import type { VectorIndex } from '../index/store.js';
import { inSpan } from '../telemetry/tracing.js';
import type { Lease } from './lock.js';
import { encode, type Tally } from './pipeline-encode.js';
import { chunkAll, chunkGroups, shifted, streamedGroups } from './pipeline-pieces.js';
import type { IngestTarget } from './request.js';
import {
  asStageError,
  cancelled,
  cancelledIf,
  inStage,
  opt,
  type PipelineProgress,
  publishAttributes,
  publishSpan,
  type Stage,
  type StageObserver,
  timed,
} from './stages.js';
import type { VersionScope } from '../versions/ledger.js';
import { commitVersion, discardVersion, stageBatch } from '../versions/publish.js';

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
  /** `INGEST_LARGE_FILES`: files over a pass's 1 MiB ingested at the same time (default 2). */
  largeFiles?: number;
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

const CONVERT_FAILURE = {
  code: 'EXTRACTION_FAILED',
  variant: 'crashed',
  message: 'Extraction failed',
} as const;

/** The convert stage of one file (one span, however many steps read it). */
export function extractFile(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  signal: AbortSignal | undefined,
): Promise<Extracted> {
  return inStage('convert', () => extractOne(parts, target, file, signal));
}

async function extractOne(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  signal: AbortSignal | undefined,
): Promise<Extracted> {
  // One convert observation per file, whichever way it was read.
  const started = performance.now();
  let docs: ExtractedDocument[];
  try {
    const streamed = await openStreamed(parts, target, file, signal);
    if (streamed) return streamed;
    docs = await timed(undefined, 'convert', CONVERT_FAILURE, () =>
      parts.extractor.extract(file, { fileId: target.fileId, ...opt(signal) }),
    );
  } finally {
    parts.observer?.stage('convert', (performance.now() - started) / 1000);
  }
  cancelledIf(signal);
  return extractedOf(parts, docs);
}

/**
 * The convert stage of many files (a pipeline pass): each file's outcome exactly as `extractFile`
 * gives it, but the files that are not streamed are read together when the engine can
 * (`Extractor.extractMany`: a few worker-pool round trips for the whole pass instead of one per
 * file). Each file's time is observed once, as its share of the shared read.
 */
export function extractFiles(
  parts: PipelineParts,
  items: ReadonlyArray<{ target: IngestTarget; file: SourceFile }>,
  signal: AbortSignal | undefined,
): Promise<Array<PromiseSettledResult<Extracted>>> {
  return inStage('convert', () => extractPassFiles(parts, items, signal));
}

async function extractPassFiles(
  parts: PipelineParts,
  items: ReadonlyArray<{ target: IngestTarget; file: SourceFile }>,
  signal: AbortSignal | undefined,
): Promise<Array<PromiseSettledResult<Extracted>>> {
  const { extractor, observer } = parts;
  if (!extractor.extractMany) {
    return Promise.all(items.map((it) => settle(extractFile(parts, it.target, it.file, signal))));
  }
  const out: Array<PromiseSettledResult<Extracted>> = [];
  const rest: number[] = [];
  const checked: number[] = [];
  await Promise.all(
    items.map(async (it, i) => {
      const started = performance.now();
      try {
        const streamed = await openStreamed(parts, it.target, it.file, signal);
        if (streamed) {
          out[i] = { status: 'fulfilled', value: streamed };
          observer?.stage('convert', (performance.now() - started) / 1000);
          return;
        }
        rest.push(i);
        checked[i] = (performance.now() - started) / 1000;
      } catch (err) {
        out[i] = { status: 'rejected', reason: err };
        observer?.stage('convert', (performance.now() - started) / 1000);
      }
    }),
  );
  if (rest.length === 0) return out;
  rest.sort((a, b) => a - b);
  const started = performance.now();
  const read = await extractor
    .extractMany(
      rest.map((i) => items[i]!.file),
      opt(signal),
    )
    .catch((reason: unknown) =>
      rest.map((): PromiseSettledResult<ExtractedDocument[]> => ({ status: 'rejected', reason })),
    );
  const share = (performance.now() - started) / 1000 / rest.length;
  rest.forEach((i, k) => {
    observer?.stage('convert', (checked[i] ?? 0) + share);
    const r = read[k]!;
    if (r.status === 'rejected') {
      out[i] = { status: 'rejected', reason: asStageError(r.reason, CONVERT_FAILURE) };
    } else if (signal?.aborted) {
      out[i] = { status: 'rejected', reason: cancelled() };
    } else {
      out[i] = { status: 'fulfilled', value: extractedOf(parts, r.value) };
    }
  });
  return out;
}

/** A plain-text file larger than one segment, opened as a stream: its text is never held whole. */
async function openStreamed(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  signal: AbortSignal | undefined,
): Promise<Extracted | undefined> {
  const { openText } = parts.extractor;
  if (!openText) return undefined;
  const minBytes = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
  const stream = await timed(undefined, 'convert', CONVERT_FAILURE, () =>
    openText.call(parts.extractor, file, { minBytes, ...opt(signal) }),
  );
  if (!stream) return undefined;
  parts.log.debug({ fileId: target.fileId }, 'plain text streamed (not held whole)');
  cancelledIf(signal);
  return { docs: [stream.doc], extraction: { engine: parts.extractor.name, profile: null }, stream };
}

/** The extracted documents with page furniture dropped, and the engine, profile and route that read them. */
function extractedOf(parts: PipelineParts, docs: ExtractedDocument[]): Extracted {
  const engine = docs.find((d) => d.extractor)?.extractor ?? parts.extractor.name;
  const profile = docs.find((d) => d.vision_profile)?.vision_profile ?? null;
  const routing = docs.find((d) => d.routing)?.routing;
  return {
    // Page furniture (table-of-contents lines) goes before chunking, whichever engine extracted,
    // and words hyphenated over a line break are joined again.
    docs: docs.map((d) => joinDocumentLineHyphens(dropTableOfContents(d))),
    extraction: { engine, profile, ...(routing ? { route: routing.route, signal: routing.signal } : {}) },
  };
}

function settle<T>(p: Promise<T>): Promise<PromiseSettledResult<T>> {
  return p.then(
    (value) => ({ status: 'fulfilled' as const, value }),
    (reason: unknown) => ({ status: 'rejected' as const, reason }),
  );
}

/** chunk → dense → sparse → write of one extracted file, in bounded batches (see `runPipeline`). */
export async function writeExtracted(
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
          { code: 'PIPELINE_FAILED', message: 'Chunking failed' },
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
            { code: 'VECTORDB_WRITE_FAILED', message: 'Writing to the vector index failed' },
            () => stageBatch(parts.index, scope, batch, staged, commit),
          );
          staged += batch.length;
          cancelledIf(signal);
        }
      }
      if (staged + pending.length === 0) {
        throw new KildeError('EXTRACTION_FAILED', 'no text could be extracted');
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
      { code: 'VECTORDB_WRITE_FAILED', message: 'Writing to the vector index failed' },
      async () => {
        try {
          // The span of the version's commit: its last batch written, then made visible.
          await inSpan(publishSpan, publishAttributes(scope, staged + pending.length), () =>
            commitVersion(parts.index, scope, pending, commit, staged),
          );
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

export function commitOptions(
  parts: PipelineParts,
  signal: AbortSignal | undefined,
  lease: Lease | undefined,
) {
  return {
    log: parts.log,
    now: parts.now ?? Date.now,
    ...opt(signal),
    ...(lease ? { lease } : {}),
    keep: parts.keepVersions ?? 0,
  };
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
