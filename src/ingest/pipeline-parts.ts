import type { Logger } from 'pino';
import type { Chunker } from '../chunk/chunker.js';
import type { BatchChunker } from '../chunk/pooled-chunker.js';
import type { Bm25Language } from '../embed/bm25/analysis.js';
import type { LexicalStage } from '../embed/bm25/lexical-stage.js';
import type { DenseEmbedder } from '../embed/dense.js';
import type { Extractor, SourceFile } from '../extract/extractor.js';
import type { VectorIndex } from '../index/store.js';
import type { Lease } from './lock.js';
import type { ChunkLexical } from './pool-chunk-lexical.js';
import type { IngestTarget } from './request.js';
import type { PipelineProgress, StageObserver } from './stages.js';

/* What the pipeline (pipeline.ts) is built of and what it takes and answers per file. */

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
  /**
   * Chunking and the lexical stage of small documents in one worker-pool task (services: both run
   * in the ingestion pool, pool-chunk-lexical.ts); without it the chunker chunks and `lexical`
   * analyses the points apart. Either way the points are the same.
   */
  chunkLexical?: ChunkLexical;
  /** `SPARSE_LANGUAGE`: the analysis language of documents whose detected languages Kilde cannot stem. */
  fallbackLanguage: Bm25Language;
  index: VectorIndex;
  log: Logger;
  observer?: StageObserver;
  /** Clock of the version ledger (ms since the epoch); tests inject one. Default `Date.now`. */
  now?: () => number;
  /** `KEEP_VERSIONS`: retired versions kept per file and collection (src/versions/retire.ts). Default 0. */
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

/** One file of a pipeline pass (`runPass`). */
export interface PassFile {
  target: IngestTarget;
  file: SourceFile;
  version: string;
  lease?: Lease;
  /** This file's caller going away (a pass of concurrent requests): fails this file alone. */
  signal?: AbortSignal;
  /** This file's progress (a job's): the stage each shared stage enters, and its chunk counts. */
  onProgress?: PipelineOptions['onProgress'];
}

/** One file's outcome in a pass: its result, or its error. */
export type FileOutcome = { ok: true; result: IngestResult } | { ok: false; error: unknown };
