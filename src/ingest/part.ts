import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock.js';
import { type IngestConfig, objectStoreSettings } from '../config/ingest.js';
import { isRetryable, KildeError } from '../errors.js';
import type { ServicePart } from '../http/app.js';
import { checkDenseUsable } from '../index/dense-check.js';
import type { VectorIndex } from '../index/store.js';
import { type BuiltPipeline, buildIngestPipeline, type StartedPipeline } from './build.js';
import type { BatchQueue } from './jobs/batch.js';
import { createBatchQueue, createJobQueue } from './jobs/create-queue.js';
import type { JobQueue } from './jobs/job.js';
import { createJobRunner, spoolRoot, sweepSpool } from './jobs/runner.js';
import type { IngestMetrics } from './metrics.js';
import { createObjectStore } from './object-store.js';
import type { Stage } from './stages.js';
import { sweepTempDirs } from './temp-dir.js';

/** A spooled upload on a shared volume younger than this may still be arriving elsewhere. */
const SPOOL_GRACE_MS = 60 * 60 * 1000;

export interface IngestPartDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** An already open index shared with other parts (`kilde serve all`); the caller closes it. */
  index?: VectorIndex;
  /** Times the worker pool's task limits and the version ledger and its sweep (tests pass a manual clock). */
  clock?: Clock;
  /**
   * `kilde serve worker`: no routes (health and metrics only), job workers always on. Default: the
   * ingest routes and the jobs API, workers as `JOBS_WORKER_ENABLED` says.
   */
  workerOnly?: boolean;
  /**
   * false: no job queue at all (the CLI's local ingest: it must never become a worker of a shared
   * Redis queue because REDIS_URL is in its environment). The job routes then answer 503.
   */
  jobs?: boolean;
  /**
   * Start one extraction worker as soon as the pipeline is built, before the index's settings and
   * sweep (`kilde ingest`, whose first pass follows at once); `preload`: PDFium too (a PDF comes).
   */
  startWorker?: { preload: boolean };
  /**
   * The pipeline's first part, started before the index opened (build.ts `startIngestPipeline`:
   * the CLI's ingest reads its first files with it meanwhile); the pipeline goes on from it.
   */
  started?: Promise<StartedPipeline>;
}

/** Waits between start-up attempts while the index is unreachable: 0.5 s doubling, at most 30 s. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;

/**
 * An index that does not answer (yet) is a state, not a configuration error: in a compose or
 * Kubernetes deployment Qdrant often starts after Kilde. Wrong settings (an incompatible
 * collection, a refused key) are 4xx answers and stay fatal.
 */
function indexUnreachable(err: unknown): boolean {
  return isRetryable(err);
}

export interface IngestPart extends ServicePart {
  /** The warm pipeline (after `start`), e.g. for tests and the CLI. */
  pipeline(): BuiltPipeline;
}

/**
 * `kilde serve ingest`: PUT /api/v1/ingest, POST /api/v1/extract, DELETE /api/v1/documents/{file_id},
 * GET /api/v1/documents/{file_id}/chunks. The pipeline is built once in `start` (tokenizer, sparse
 * model, index reachable, collection ensured); readiness is 503 until then.
 */
export function createIngestPart(config: IngestConfig, deps: IngestPartDeps): IngestPart {
  const objectStore = createObjectStore(objectStoreSettings(config), { log: deps.log });
  let built: BuiltPipeline | undefined;
  let metrics: IngestMetrics | undefined;
  /** Why the pipeline is not built yet, while start-up keeps retrying in the background. */
  let waiting: string | undefined;
  /** Built but not yet usable: its collection is still to be ensured. */
  let pending: BuiltPipeline | undefined;
  const stopping = new AbortController();
  let retrying: Promise<void> | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | undefined;
  let queue: JobQueue | undefined;
  let batches: BatchQueue | undefined;
  const runWorkers = deps.workerOnly === true || config.JOBS_WORKER_ENABLED;
  const clock = deps.clock ?? systemClock;

  /** One version sweep at a time; a failure is logged and the next sweep tries again. */
  function sweep(made: BuiltPipeline): Promise<void> {
    sweeping ??= made.service
      .sweepVersions(config.INGEST_SWEEP_GRACE * 1000)
      .then(
        () => undefined,
        (err: unknown) => deps.log.warn({ err }, 'version sweep failed; the next one retries'),
      )
      .finally(() => {
        sweeping = undefined;
      });
    return sweeping;
  }

  /** Settles what a crash left behind before the first request, then keeps sweeping. */
  async function ready(made: BuiltPipeline): Promise<void> {
    pending = made;
    // Before the sweep and any write: the sweep retires versions by KEEP_VERSIONS too.
    await made.reconcileSettings();
    await sweep(made);
    if (stopping.signal.aborted) return;
    built = made;
    pending = undefined;
    // Jobs run only on a warm pipeline; until then they wait in the queue.
    if (runWorkers && queue) {
      await queue.startWorker(
        createJobRunner({
          pipeline,
          objectStore,
          maxBytes: config.MAX_UPLOAD_BYTES,
          observer: stageObserver,
        }),
      );
      if (batches) {
        const { createBatchRunner } = await import('./jobs/batch-runner.js');
        await batches.startWorker(createBatchRunner({ pipeline }));
      }
    }
    if (config.INGEST_SWEEP_INTERVAL > 0) {
      sweepTimer = setInterval(() => void sweep(made), config.INGEST_SWEEP_INTERVAL * 1000);
      sweepTimer.unref();
    }
  }
  const pipeline = (): BuiltPipeline => {
    if (!built) throw new KildeError('NOT_READY', 'The ingestion pipeline is still starting');
    return built;
  };
  const stageObserver = {
    stage: (stage: Stage, seconds: number) => metrics?.stage(stage, seconds),
  };
  const build = () =>
    buildIngestPipeline(config, {
      log: deps.log,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      ...(deps.index ? { index: deps.index } : {}),
      ...(deps.clock ? { clock: deps.clock } : {}),
      // Stage timings reach the metrics once routes are registered (the CLI has none).
      observer: {
        stage: (stage: Stage, seconds: number) => metrics?.stage(stage, seconds),
        route: (engine: string, signal: string) => metrics?.route(engine, signal),
      },
      deferEnsure: true,
      ...(deps.started ? { started: deps.started } : {}),
    });

  /** Retries ensuring the collection until the index answers; the rest of the pipeline is built. */
  async function retryEnsure(made: BuiltPipeline): Promise<void> {
    for (let delay = RETRY_FIRST_MS; ; delay = Math.min(delay * 2, RETRY_MAX_MS)) {
      try {
        await clock.sleep(delay, stopping.signal);
        await made.index.ensureCollection();
      } catch (err) {
        if (stopping.signal.aborted) return;
        if (indexUnreachable(err)) {
          waiting = `waiting for the vector index: ${(err as Error).message}`;
          deps.log.warn({ reason: (err as Error).message }, 'vector index still unreachable');
          continue;
        }
        // Reachable now but unusable (e.g. an incompatible collection): readiness says why.
        waiting = `start-up failed: ${(err as Error).message}`;
        deps.log.error({ err }, 'ingestion pipeline cannot start');
        return;
      }
      if (stopping.signal.aborted) return;
      try {
        await ready(made);
      } catch (err) {
        // E.g. INDEX_SETTINGS_CONFLICT: readiness says why.
        waiting = `start-up failed: ${(err as Error).message}`;
        deps.log.error({ err }, 'ingestion pipeline cannot start');
        return;
      }
      waiting = undefined;
      deps.log.info('vector index reachable: ingestion pipeline ready');
      return;
    }
  }

  return {
    name: 'ingest',
    pipeline,
    probes: [
      {
        name: 'ingest-pipeline',
        check: async () => {
          if (!built) throw new Error(waiting ?? 'pipeline not warmed up yet');
        },
      },
      {
        name: 'index',
        timeoutMs: Math.min(config.VECTORDB_TIMEOUT * 1000, 5000),
        check: async (signal) => {
          if (!built) throw new Error('collection not ensured yet');
          await built.index.ping(signal);
          // The collection may have been recreated with another dense size since start-up.
          await checkDenseUsable(built.index, config, 'ingest');
        },
      },
      {
        name: 'jobs',
        timeoutMs: 5000,
        check: async (signal) => {
          if (deps.jobs === false) return;
          if (!queue || !batches) throw new Error('job queue not started');
          await Promise.all([queue.probe(signal), batches.probe(signal)]);
        },
      },
    ],
    info: () => ({
      ingest: {
        max_upload_bytes: config.MAX_UPLOAD_BYTES,
        max_text_chars: config.EXTRACTION_MAX_TEXT_CHARS,
        dense: config.EMBEDDING_PROVIDER !== 'none',
        sparse: config.ENABLE_SPARSE_EMBEDDINGS,
        // The engine files go to; with `auto`, the engines it routes between.
        engines: [
          ...new Set(
            config.EXTRACTION_ENGINE === 'auto'
              ? [config.EXTRACTION_ROUTER_DEFAULT, config.EXTRACTION_ROUTER_DIAGRAM_ENGINE]
              : [config.EXTRACTION_ENGINE],
          ),
        ],
      },
      // The index's value once the pipeline has read it (a process may leave KEEP_VERSIONS unset).
      keep_versions: built?.service.keepVersions ?? config.KEEP_VERSIONS ?? 0,
    }),
    async register(app, ctx) {
      // The routes, their multipart parser and the metrics load with the HTTP app: the local CLI,
      // which drives the pipeline without one, never loads them.
      const [
        { createIngestMetrics },
        { registerIngestRoutes },
        { registerJobRoutes },
        { registerBatchRoutes },
      ] = await Promise.all([
        import('./metrics.js'),
        import('./routes.js'),
        import('./jobs/routes.js'),
        import('./jobs/batch-routes.js'),
      ]);
      const m = createIngestMetrics(ctx.metrics);
      metrics = m;
      if (deps.workerOnly) return;
      await registerIngestRoutes(app, ctx, {
        pipeline,
        objectStore,
        metrics: m,
        maxBytes: config.MAX_UPLOAD_BYTES,
        inspection: config.ENABLE_INSPECTION_API,
        debug: config.DEBUG,
      });
      registerJobRoutes(app, ctx, {
        queue: () => {
          if (!queue) throw new KildeError('NOT_READY', 'The job queue is still starting');
          return queue;
        },
        objectStore,
        maxBytes: config.MAX_UPLOAD_BYTES,
        spool: spoolRoot(config.JOBS_SPOOL_DIR),
        identify: async (target, fields) => {
          const { identifyUpload } = await import('./file-identity.js');
          return identifyUpload(pipeline().index, target, fields);
        },
      });
      registerBatchRoutes(app, ctx, {
        batches: () => {
          if (!batches) throw new KildeError('NOT_READY', 'The job queue is still starting');
          return batches;
        },
        limits: {
          maxFileBytes: config.MAX_UPLOAD_BYTES,
          maxFiles: config.JOBS_BATCH_MAX_FILES,
          maxBytes: config.JOBS_BATCH_MAX_BYTES,
        },
        spool: spoolRoot(config.JOBS_SPOOL_DIR),
        // Small files stay in memory when this process runs the batch and its engine reads them so.
        inMemory: () => batches?.kind === 'memory' && built?.extractor.acceptsData === true,
        identify: async (uploads) => {
          const { identifyUploads } = await import('./file-identity.js');
          return identifyUploads(pipeline().index, uploads);
        },
      });
      // LibreChat's RAG API (docs/librechat.md): mounted only with its shared secret.
      const secret = config.LIBRECHAT_JWT_SECRET;
      if (secret !== undefined) {
        const { registerLibreChatWriteRoutes } = await import('./librechat.js');
        await app.register(async (scope) =>
          registerLibreChatWriteRoutes(scope, ctx, {
            pipeline,
            metrics: m,
            maxBytes: config.MAX_UPLOAD_BYTES,
            settings: { secret, prefix: config.LIBRECHAT_COLLECTION_PREFIX, clock },
          }),
        );
      }
    },
    /**
     * Builds the pipeline. When only the index is unreachable, start-up does not fail: the service
     * listens (liveness 200, readiness 503 naming the reason, routes 503) and keeps retrying.
     */
    async start() {
      if (built || pending) return;
      const stale = await sweepTempDirs().catch((err: unknown) => {
        deps.log.warn({ err }, 'could not sweep stale upload folders');
        return [];
      });
      if (stale.length > 0) deps.log.info({ folders: stale.length }, 'removed stale upload folders');
      // Redis unreachable at start-up refuses to start, as the per-file lease does.
      if (deps.jobs !== false) {
        queue ??= await createJobQueue(config, { log: deps.log, clock });
        batches ??= await createBatchQueue(config, { log: deps.log, clock });
        deps.log.info({ queue: queue.kind, workers: runWorkers }, 'ingestion jobs ready');
        const jobs = queue;
        const batchQueue = batches;
        // A spool folder is a job's or a batch's: either still needing it keeps it.
        const either = {
          kind: jobs.kind,
          get: async (id: string) => (await jobs.get(id)) ?? (await batchQueue.get(id)),
        };
        const spooled = await sweepSpool(spoolRoot(config.JOBS_SPOOL_DIR), either, {
          now: clock.now(),
          graceMs: SPOOL_GRACE_MS,
        }).catch((err: unknown) => {
          deps.log.warn({ err }, 'could not sweep the job spool');
          return [];
        });
        if (spooled.length > 0)
          deps.log.info({ folders: spooled.length }, 'removed spooled uploads no job needs');
      }
      const made = await build();
      if (deps.startWorker) made.pool.startOne(deps.startWorker.preload);
      try {
        await made.index.ensureCollection();
      } catch (err) {
        if (!indexUnreachable(err)) {
          await made.close();
          throw err;
        }
        pending = made;
        waiting = `waiting for the vector index: ${(err as Error).message}`;
        deps.log.warn({ err }, 'vector index unreachable at start-up; retrying in the background');
        retrying = retryEnsure(made);
        return;
      }
      await ready(made);
    },
    /** The kept extraction workers start now, so the first upload does not wait for one. */
    afterListen() {
      (built ?? pending)?.pool.prewarm();
    },
    async close() {
      stopping.abort();
      clearInterval(sweepTimer);
      await retrying;
      await sweeping;
      // Workers first: running jobs finish on the pipeline before it closes.
      await Promise.all([queue?.close(), batches?.close()]);
      queue = undefined;
      batches = undefined;
      objectStore.close();
      await (built ?? pending)?.close();
      built = undefined;
      pending = undefined;
    },
  };
}
