import type { Logger } from 'pino';
import { createChunker } from '../chunk/create-chunker.js';
import { createPooledChunker } from '../chunk/pooled-chunker.js';
import { chooseTokenCounter } from '../chunk/tokenizer.js';
import { type Clock, systemClock } from '../clock.js';
import { chunkingSettings } from '../config/chunking.js';
import { extractionLimits } from '../config/extraction.js';
import type { IngestConfig } from '../config/ingest.js';
import { ConfigError } from '../config/parse.js';
import { createPooledLexicalStage } from '../embed/bm25/lexical-stage.js';
import { createDenseEmbedder } from '../embed/create-dense.js';
import { createSparseEncoder } from '../embed/create-sparse.js';
import { KildeError } from '../errors.js';
import { createExtractor } from '../extract/create-extractor.js';
import type { Extractor } from '../extract/extractor.js';
import { type HeadStart, withHeadStart } from '../extract/head-start.js';
import { engineFor, openIndex } from '../index/open.js';
import { indexSettingsFrom } from '../index/settings-from-config.js';
import type { VectorIndex } from '../index/store.js';
import { WorkerPool } from '../pool/worker-pool.js';
import type { FileLock } from './lock.js';
import { INGEST_POOL, type IngestTasks } from './pool.js';
import { createPooledChunkLexical } from './pool-chunk-lexical.js';
import { IngestService } from './service.js';
import type { StageObserver } from './stages.js';

export interface BuildDeps {
  log: Logger;
  /** Outbound HTTP of the embedder, extractor and Qdrant adapter (tests pass their own). */
  fetch?: typeof fetch;
  observer?: StageObserver;
  /** An already open index (`kilde serve all` shares one with retrieval); the caller closes it. */
  index?: VectorIndex;
  /** Leave `index.ensureCollection()` to the caller (which may wait for an index that is not up yet). */
  deferEnsure?: boolean;
  /** Times the worker pool's task limits and the version ledger and its sweep (tests pass a manual clock). */
  clock?: Clock;
}

export interface BuiltPipeline {
  service: IngestService;
  index: VectorIndex;
  /** The configured engine (EXTRACTION_ENGINE). */
  extractor: Extractor;
  /** Any concrete engine by name, for the extraction probe. */
  extractorFor(engine: string): Extractor;
  /** The worker pool of extraction, chunking and BM25 encoding. */
  pool: WorkerPool<IngestTasks>;
  /**
   * Honours the settings recorded in the index and records this process's (index-settings.ts);
   * run once the collection exists, before any write. Throws `INDEX_SETTINGS_CONFLICT`.
   */
  reconcileSettings(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The part of the pipeline that needs no index: the lock, tokenizer, encoders, worker pool and
 * extraction engines (`startIngestPipeline`). The local `kilde ingest` starts it while the index
 * opens and reads its first passes' files with it (`headStart`); `buildIngestPipeline` goes on from it.
 */
export interface StartedPipeline {
  /** The worker pool of extraction, chunking and BM25 encoding. */
  pool: WorkerPool<IngestTasks>;
  /** The configured engine (EXTRACTION_ENGINE), with the head start's results taken by the passes. */
  extractor: Extractor;
  /** Reads files ahead of their pass with `extractor` (src/extract/head-start.ts). */
  headStart: HeadStart;
  /** Stops what was started; once a pipeline is built on it, that pipeline's `close` does (idempotent). */
  close(): Promise<void>;
  /** What `buildIngestPipeline` goes on with. */
  readonly rest: ReturnType<typeof startedParts> & {
    lock: FileLock | undefined;
    tokens: Awaited<ReturnType<typeof chooseTokenCounter>>;
    /** The pipeline built on it closes the lock (with its service). */
    handOver(): void;
  };
}

/**
 * Starts the part of the pipeline that needs no index (`StartedPipeline`). It throws (start-up
 * fails loudly) on impossible settings: a chunk size, an unknown sparse model, a missing vector.
 */
export async function startIngestPipeline(config: IngestConfig, deps: BuildDeps): Promise<StartedPipeline> {
  const { log } = deps;
  // First: a deployment with REDIS_URL set never runs without its shared lock.
  const lock = await openFileLock(config, deps, log);
  const tokens = await chooseTokenCounter({
    tokenizerModel: config.TOKENIZER_MODEL,
    embeddingModel: config.EMBEDDING_MODEL,
  });
  if (tokens.warning) log.warn(tokens.warning);
  let rest: ReturnType<typeof startedParts>;
  try {
    rest = startedParts(config, deps, tokens.counter);
  } catch (err) {
    await Promise.allSettled([lock?.close(), tokens.counter.close?.()]);
    throw err;
  }
  const { pool, engines, extractor, headStart } = rest;
  let ownLock = lock;
  let closing: Promise<void> | undefined;
  return {
    pool,
    extractor,
    headStart,
    rest: {
      ...rest,
      lock,
      tokens,
      handOver: () => {
        ownLock = undefined;
      },
    },
    close: () =>
      (closing ??= (async () => {
        await Promise.allSettled([
          tokens.counter.close?.(),
          ...[...engines.values()].map((e) => e.close?.()),
          ownLock?.close(),
        ]);
        await pool.close();
      })()),
  };
}

/** `startIngestPipeline`'s parts after the lock and the tokenizer. */
function startedParts(
  config: IngestConfig,
  deps: BuildDeps,
  counter: Awaited<ReturnType<typeof chooseTokenCounter>>['counter'],
) {
  const { log } = deps;
  const http = deps.fetch ? { fetch: deps.fetch } : {};
  const chunking = chunkingSettings(config);
  const dense = createDenseEmbedder(config, { log, counter, ...http });
  if (!dense) {
    log.warn(
      'lexical-only mode (EMBEDDING_PROVIDER=none): points carry no dense vector; set EMBEDDING_PROVIDER, EMBEDDING_MODEL and EMBEDDING_DIM to enable dense search',
    );
  }
  const chunkerSettings = {
    ...chunking,
    ...(dense
      ? {
          prefixTokens: counter.count(config.EMBEDDING_PREFIX_DOC),
          maxTokens: config.EMBEDDING_MAX_TOKENS,
        }
      : {}),
  };
  // Built here only to refuse impossible settings at start-up; chunking itself runs in the pool.
  createChunker(chunkerSettings, counter);
  const indexSettings = {
    ...indexSettingsFrom(config, config.ENABLE_SPARSE_EMBEDDINGS),
    language: config.SPARSE_LANGUAGE,
  };
  if (!dense && !config.ENABLE_SPARSE_EMBEDDINGS && engineFor(indexSettings.uri) === 'qdrant') {
    throw new ConfigError(
      'Configuration error: EMBEDDING_PROVIDER=none on Qdrant needs ENABLE_SPARSE_EMBEDDINGS=true (points would carry no vector at all)',
    );
  }
  // Refuses an unknown sparse model at start-up; the vectors themselves are made in the pool.
  const sparseModel = config.ENABLE_SPARSE_EMBEDDINGS
    ? createSparseEncoder(config.SPARSE_EMBEDDING_MODEL, config.SPARSE_LANGUAGE).model
    : undefined;
  // Extraction, chunking and BM25 encoding of whole documents run in this pool, off the event loop.
  const pool = new WorkerPool<IngestTasks>(
    {
      ...INGEST_POOL,
      size: config.EXTRACTION_WORKERS,
      warm: config.EXTRACTION_WARM_WORKERS,
      heapMb: config.EXTRACTION_MAX_HEAP_MB,
      timeoutMs: config.EXTRACTION_TIMEOUT * 1000,
      // A worker's preload loads PDFium (preloadExtraction): PDFs go to it (pool-policy.ts, `idleFor`).
      preloads: config.EXTRACTION_PDF_READER === 'pdfjs' ? [] : ['pdf'],
      setup: {
        limits: extractionLimits(config),
        pdfReader: config.EXTRACTION_PDF_READER,
        chunking: { settings: chunkerSettings, counter: counter.source ?? 'approximate' },
      },
    },
    { log, ...(deps.clock ? { clock: deps.clock } : {}) },
  );
  const chunker = createPooledChunker(pool, chunking.mode);
  // BM25 vectors only where the index keeps them (Qdrant's `text-sparse`): a LanceDB table has no
  // sparse column (its full-text index reads the terms), so hashing, packing and sending them was
  // work thrown away at the write (docs/performance-ingestion.md, "Against LangChain.js").
  const storedSparse = engineFor(indexSettings.uri) === 'qdrant' ? sparseModel : undefined;
  const lexical = createPooledLexicalStage(pool, { sparseModel: storedSparse });
  const onRoute = deps.observer?.route?.bind(deps.observer);
  let configured: Extractor;
  try {
    configured = createExtractor(config.EXTRACTION_ENGINE, config, {
      log,
      pool,
      ...http,
      ...(deps.clock ? { clock: deps.clock } : {}),
      ...(onRoute ? { onRoute } : {}),
    });
  } catch (err) {
    void pool.close();
    throw err;
  }
  const { extractor, headStart } = withHeadStart(configured);
  // The probe route may name another engine; each is built once, on first use.
  const engines = new Map<string, Extractor>([[configured.name, configured]]);
  const extractorFor = (engine: string): Extractor => {
    if (engine === configured.name) return extractor;
    const known = engines.get(engine);
    if (known) return known;
    const made = createExtractor(engine, config, {
      log,
      pool,
      ...http,
      ...(deps.clock ? { clock: deps.clock } : {}),
    });
    engines.set(engine, made);
    return made;
  };
  return {
    chunking,
    dense,
    indexSettings,
    sparseModel,
    storedSparse,
    pool,
    chunker,
    lexical,
    extractor,
    headStart,
    engines,
    extractorFor,
    http,
  };
}

/**
 * Builds the pipeline once, at start-up: tokenizer and chunker, the extraction engine, dense and
 * sparse encoders and the index with its collection ensured. It throws (start-up fails loudly) when
 * any of them cannot be built, e.g. an incompatible existing collection. `deps.started`: its first
 * part, already started (`startIngestPipeline`); the pipeline then owns it.
 */
export async function buildIngestPipeline(
  config: IngestConfig,
  deps: BuildDeps & { started?: Promise<StartedPipeline> },
): Promise<BuiltPipeline> {
  const { log, clock } = deps;
  const started = await (deps.started ?? startIngestPipeline(config, deps));
  const { rest } = started;
  const { chunking, dense, indexSettings, sparseModel, storedSparse, pool, chunker, lexical } = rest;
  const { extractor, extractorFor, http, lock, tokens } = rest;
  const ownsIndex = deps.index === undefined;
  let index: VectorIndex;
  try {
    index = deps.index ?? (await openIndex(indexSettings, { log, ...http }));
  } catch (err) {
    await started.close();
    throw err;
  }
  if (!deps.deferEnsure) {
    try {
      await index.ensureCollection();
    } catch (err) {
      if (ownsIndex) await index.close().catch(() => undefined);
      await started.close();
      throw err;
    }
  }
  log.info(
    {
      extraction: extractor.name,
      chunking: chunking.mode,
      chunkSize: chunking.size,
      tokenizer: tokens.counter.source ?? 'approximate',
      dense: dense ? `${dense.provider}:${dense.model} (${dense.dim})` : 'none',
      sparse: sparseModel ?? 'off',
      fallbackLanguage: config.SPARSE_LANGUAGE,
      index: index.engine,
    },
    'ingestion pipeline ready',
  );
  const service = new IngestService(
    {
      extractor,
      chunker,
      index,
      log,
      ...(dense ? { dense } : {}),
      lexical,
      // Small documents chunked and analysed in one pool task (one round trip fewer a pass).
      chunkLexical: createPooledChunkLexical(pool, {
        fallback: config.SPARSE_LANGUAGE,
        sparse: storedSparse !== undefined,
      }),
      fallbackLanguage: config.SPARSE_LANGUAGE,
      keepVersions: config.KEEP_VERSIONS ?? 0,
      batchChunks: config.INGEST_BATCH_CHUNKS,
      segmentChars: config.INGEST_SEGMENT_CHARS,
      largeFiles: config.INGEST_LARGE_FILES,
      ...(deps.observer ? { observer: deps.observer } : {}),
      ...(clock ? { now: () => clock.now() } : {}),
    },
    lock,
  );
  rest.handOver();
  return {
    service,
    index,
    extractor,
    extractorFor,
    pool,
    async reconcileSettings() {
      const { reconcileIndexSettings } = await import('./index-settings.js');
      const { keepVersions } = await reconcileIndexSettings(
        index,
        {
          keepVersions: config.KEEP_VERSIONS,
          embedding: dense ? { model: dense.model, dim: dense.dim } : null,
          update: config.INDEX_SETTINGS_UPDATE,
          now: () => (clock ?? systemClock).now(),
        },
        log,
      );
      service.useKeepVersions(keepVersions);
    },
    async close() {
      await Promise.allSettled([ownsIndex ? index.close() : undefined, dense?.close?.(), service.close()]);
      await started.close();
    },
  };
}

/** The Redis lease when `REDIS_URL` is set (start-up fails when Redis cannot be reached), else in-process. */
async function openFileLock(
  config: IngestConfig,
  deps: BuildDeps,
  log: Logger,
): Promise<FileLock | undefined> {
  if (config.REDIS_URL === undefined) return undefined;
  // ioredis loads only where a lease is configured.
  const { connectRedis, RedisFileLock } = await import('./redis-lock.js');
  const lock = new RedisFileLock(connectRedis(config.REDIS_URL, log), {
    leaseMs: config.LOCK_LEASE_MS,
    retryMs: config.LOCK_RETRY_MS,
    clock: deps.clock ?? systemClock,
    log,
  });
  try {
    await lock.connect();
  } catch (err) {
    await lock.close();
    throw new KildeError('LOCK_FAILED', 'Redis (REDIS_URL) is unreachable', { cause: err });
  }
  log.info({ leaseMs: config.LOCK_LEASE_MS }, 'per-file_id lock: Redis lease');
  return lock;
}
