import type { Logger } from 'pino';
import { type IngestConfig, objectStoreSettings } from '../config/ingest.js';
import type { ServicePart } from '../http/app.js';
import { KildeError } from '../http/errors.js';
import type { VectorIndex } from '../index/store.js';
import { type BuiltPipeline, buildIngestPipeline } from './build.js';
import { createIngestMetrics, type IngestMetrics } from './metrics.js';
import { createObjectStore } from './object-store.js';
import type { Stage } from './pipeline.js';
import { registerIngestRoutes } from './routes.js';

export interface IngestPartDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** An already open index shared with other parts (`kilde serve all`); the caller closes it. */
  index?: VectorIndex;
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
  const pipeline = (): BuiltPipeline => {
    if (!built) throw new KildeError('NOT_READY', 503, 'The ingestion pipeline is still starting');
    return built;
  };
  return {
    name: 'ingest',
    pipeline,
    probes: [
      {
        name: 'ingest-pipeline',
        check: async () => {
          if (!built) throw new Error('pipeline not warmed up yet');
        },
      },
      {
        name: 'index',
        timeoutMs: Math.min(config.VECTORDB_TIMEOUT * 1000, 5000),
        check: async (signal) => {
          if (!built) throw new Error('collection not ensured yet');
          await built.index.ping(signal);
        },
      },
    ],
    async register(app, ctx) {
      const m = createIngestMetrics(ctx.metrics);
      metrics = m;
      await registerIngestRoutes(app, ctx, {
        pipeline,
        objectStore,
        metrics: m,
        maxBytes: config.MAX_UPLOAD_BYTES,
        inspection: config.ENABLE_INSPECTION_API,
        debug: config.DEBUG,
      });
    },
    async start() {
      if (built) return;
      built = await buildIngestPipeline(config, {
        log: deps.log,
        ...(deps.fetch ? { fetch: deps.fetch } : {}),
        ...(deps.index ? { index: deps.index } : {}),
        // Stage timings reach the metrics once routes are registered (the CLI has none).
        observer: { stage: (stage: Stage, seconds: number) => metrics?.stage(stage, seconds) },
      });
    },
    async close() {
      objectStore.close();
      await built?.close();
      built = undefined;
    },
  };
}
