import type { Chunk } from '../chunk/chunker.js';
import type { LexicalOutput } from '../embed/bm25/lexical-stage.js';
import { KildeError } from '../errors.js';
import type { ExtractedDocument } from '../extract/extractor.js';
import { type ChunkMeta, type IndexPoint, pointId } from '../index/contract.js';
import { inSpan } from '../telemetry/tracing.js';
import type { VersionScope } from '../versions/ledger.js';
import { commitVersion, discardVersion, stageBatch } from '../versions/publish.js';
import type { Lease } from './lock.js';
import { encode, type Tally } from './pipeline-encode.js';
import type { Extracted } from './pipeline-extract.js';
import {
  DEFAULT_BATCH_CHUNKS,
  DEFAULT_SEGMENT_CHARS,
  type IngestResult,
  type PipelineParts,
} from './pipeline-parts.js';
import { chunkAll, chunkGroups, type Piece, shifted, streamedGroups } from './pipeline-pieces.js';
import type { IngestTarget } from './request.js';
import {
  cancelledIf,
  opt,
  type PipelineProgress,
  publishAttributes,
  publishSpan,
  type Stage,
  type StageObserver,
  timed,
} from './stages.js';

/*
 * A file's points and their way into the index: built from its chunks, and either committed as
 * its new version in one step (`publish`), or, for a file larger than one batch, staged batch by
 * batch and made visible as a whole after the last (`writeInBatches`).
 */

export const CHUNK_FAILURE = { code: 'PIPELINE_FAILED', message: 'Chunking failed' } as const;
const WRITE_FAILURE = {
  code: 'VECTORDB_WRITE_FAILED',
  message: 'Writing to the vector index failed',
} as const;

/** A document's chunks as points of the file's version, numbered on from `first` (blank chunks dropped). */
export function pointsOf(
  parts: PipelineParts,
  target: IngestTarget,
  version: string,
  doc: ExtractedDocument,
  chunks: readonly Chunk[],
  first: number,
): IndexPoint[] {
  const out: IndexPoint[] = [];
  for (const chunk of chunks) {
    if (chunk.content.trim() === '') continue;
    const splitId = first + out.length;
    out.push({
      id: pointId(target.fileId, version, splitId),
      content: chunk.content,
      meta: chunkMeta(target, doc, chunk, splitId, version, parts.extractor.name),
    });
  }
  return out;
}

/**
 * The version's commit (its last `points`, after `staged` points written ahead, made visible and
 * the older versions retired) as the `write` stage, in its publish span. Aborted before the version
 * became visible, it fails as cancelled: nothing of it stays, the previous version does.
 */
export function publish(
  parts: PipelineParts,
  scope: VersionScope,
  points: IndexPoint[],
  staged: number,
  signal: AbortSignal | undefined,
  lease: Lease | undefined,
  observer: StageObserver | undefined,
): Promise<void> {
  return timed(observer, 'write', WRITE_FAILURE, async () => {
    try {
      await inSpan(publishSpan, publishAttributes(scope, staged + points.length), () =>
        commitVersion(parts.index, scope, points, commitOptions(parts, signal, lease), staged),
      );
    } catch (err) {
      cancelledIf(signal);
      throw err;
    }
  });
}

/**
 * chunk → dense → sparse → write of one file in bounded batches of `INGEST_BATCH_CHUNKS` points:
 * every batch but the last is staged (invisible), the last commits the version as a whole. Its
 * points are chunked here a segment group at a time, or given (`chunked`: a pass chunked the file
 * already and found it larger than one batch). A failure deletes the batches staged so far.
 */
export async function writeInBatches(
  parts: PipelineParts,
  target: IngestTarget,
  extracted: Extracted,
  version: string,
  signal: AbortSignal | undefined,
  lease: Lease | undefined,
  report: (progress: PipelineProgress) => void,
  chunked?: IndexPoint[],
): Promise<IngestResult> {
  const { observer, log } = parts;
  if (!chunked) report({ stage: 'chunk' });
  // A file written in several batches reports each stage once, its time summed over the batches.
  const times = new Map<Stage, number>();
  const summed: StageObserver = { stage: (stage, s) => times.set(stage, (times.get(stage) ?? 0) + s) };
  const scope: VersionScope = { fileId: target.fileId, collectionName: target.collectionName, version };
  const batchChunks = Math.max(1, parts.batchChunks ?? DEFAULT_BATCH_CHUNKS);
  let pending: IndexPoint[] = [];
  let staged = 0;
  // Chunks that have passed the embedding stages, for the progress report; the total is known
  // once the last batch is reached (a file written in one batch knows it at once).
  const tally: Tally = { report, done: 0 };
  try {
    try {
      for await (const { points, more } of chunked
        ? [{ points: chunked, more: false }]
        : chunkedGroups(parts, target, extracted, version, summed, signal)) {
        pending.push(...points);
        cancelledIf(signal);
        // A batch is written ahead (staged, invisible) only when more chunks follow it: a file that
        // fits in one batch is written in one step, as a whole. Half a batch is written ahead while
        // the worker chunks the next group, rather than the worker waiting for it and it for the worker.
        while (pending.length > batchChunks || (more && pending.length >= batchChunks / 2)) {
          const batch = pending.slice(0, batchChunks);
          pending = pending.slice(batchChunks);
          await encode(parts, batch, summed, signal, tally);
          await timed(summed, 'write', WRITE_FAILURE, () =>
            stageBatch(parts.index, scope, batch, staged, commitOptions(parts, signal, lease)),
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
    await publish(parts, scope, pending, staged, signal, lease, summed);
    return {
      collectionName: target.collectionName,
      chunksCount,
      ingestVersion: version,
      extraction: extracted.extraction,
    };
  } finally {
    for (const [stage, s] of times) observer?.stage(stage, s);
  }
}

/**
 * A file's points, a group of segments at a time (a streamed file's as it is read), each with
 * whether another group is being chunked (`more`). Each group is
 * chunked, and with `parts.chunkLexical` analysed in the same pool task (its text crosses to the
 * worker once, its points come back with their lexical side); the next group's task is sent before
 * this group's points are handed on, so the worker chunks it while the caller embeds and writes
 * (a 300-page PDF: the worker chunked, then sat idle while the main process wrote).
 */
async function* chunkedGroups(
  parts: PipelineParts,
  target: IngestTarget,
  extracted: Extracted,
  version: string,
  observer: StageObserver,
  signal: AbortSignal | undefined,
): AsyncGenerator<{ points: IndexPoint[]; more: boolean }> {
  const segmentChars = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
  const docs = extracted.docs;
  const groups = extracted.stream
    ? streamedGroups(extracted.stream, segmentChars, signal)
    : chunkGroups(docs, segmentChars);
  let next = 0;
  const pointsOfGroup = ({ group, chunked, lexical }: ChunkedGroup): IndexPoint[] => {
    const points: IndexPoint[] = [];
    group.forEach((g, i) => {
      const chunks = (chunked[i] ?? []).map((c) => shifted(c, g.offset));
      points.push(...pointsOf(parts, target, version, docs[g.doc]!, chunks, next + points.length));
    });
    // The analysed chunks are the kept ones in order, as `pointsOf` keeps them.
    if (lexical) {
      points.forEach((p, k) => {
        p.lexical = lexical.lexical[k]!;
        const sparse = lexical.sparse?.[k];
        if (sparse) p.sparse = sparse;
      });
    }
    next += points.length;
    return points;
  };
  // A caller that stops early (a failed write) leaves at most one task running; its result is dropped.
  let ahead: Promise<ChunkedGroup> | undefined;
  for await (const group of groups) {
    const started = chunkGroup(parts, docs, group, observer);
    // Awaited once the group before it is handed on; until then its failure is no unhandled rejection.
    started.catch(() => undefined);
    if (ahead) yield { points: pointsOfGroup(await ahead), more: true };
    ahead = started;
  }
  if (ahead) yield { points: pointsOfGroup(await ahead), more: false };
}

/** A group of segments as chunked, and with `parts.chunkLexical` its kept chunks' lexical side. */
interface ChunkedGroup {
  group: Piece[];
  chunked: Chunk[][];
  lexical?: LexicalOutput;
}

async function chunkGroup(
  parts: PipelineParts,
  docs: readonly ExtractedDocument[],
  group: Piece[],
  observer: StageObserver,
): Promise<ChunkedGroup> {
  const { chunkLexical } = parts;
  if (!chunkLexical) {
    const chunked = await timed(observer, 'chunk', CHUNK_FAILURE, () =>
      chunkAll(
        parts.chunker,
        group.map((g) => g.input),
      ),
    );
    return { group, chunked };
  }
  const out = await timed(observer, 'chunk', CHUNK_FAILURE, () =>
    chunkLexical(
      group.map((g) => {
        const { title, languages } = docs[g.doc]!.metadata;
        return { input: g.input, ...(title ? { title } : {}), languages: [...languages] };
      }),
    ),
  );
  // The analysis's share of the task is the sparse stage's (as a pass's small files observe it).
  observer.stage('sparse', out.analyseSeconds);
  return { group, chunked: out.chunks, lexical: out.lexical };
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
