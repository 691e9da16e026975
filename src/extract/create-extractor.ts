import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import {
  CONCRETE_ENGINES,
  type ConcreteEngine,
  EXTRACTION_ENGINES,
  type ExtractionSettings,
  extractionLimits,
} from '../config/extraction.js';
import { ConfigError } from '../config/parse.js';
import { WorkerPool, workerEntry } from '../pool/worker-pool.js';
import { createAutoRouter } from './auto-router.js';
import { createDoclingExtractor } from './docling-engine.js';
import type { Extractor } from './extractor.js';
import { createKreuzbergExtractor } from './kreuzberg-engine.js';
import { EXTRACTION_POOL_ERRORS } from './limits.js';
import type { ExtractTasks } from './pool-tasks.js';
import { createPooledExtractor, PDF_SPLIT } from './pooled-engine.js';
import { routerThresholds } from './routing.js';
import { createUnstructuredExtractor } from './unstructured-engine.js';
import { createHybridExtractor } from './vision/hybrid-engine.js';
import {
  createGotenbergRenderer,
  createLocalOfficeRenderer,
  type OfficeRenderer,
} from './vision/office-render.js';
import { createPageRenderer, type PageRenderer } from './vision/page-images.js';
import { createVisionClient, type VisionClient } from './vision/vision-client.js';
import { createVisionExtractor } from './vision/vision-engine.js';

export interface ExtractorDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** The worker pool the in-process engines run in; without one, the engine gets its own. */
  pool?: WorkerPool<ExtractTasks>;
  /** Times an own pool's task limits and the outbound time-outs (tests pass a manual clock). */
  clock?: Clock;
  /** Counts the `auto` router's decisions. */
  onRoute?: (engine: string, signal: string) => void;
}

/** What the factories get: the pool is always there (the caller's, or one made for this engine). */
interface FactoryDeps extends ExtractorDeps {
  pool: WorkerPool<ExtractTasks>;
  /** The vision engines' shared parts, made on first use. */
  vision: () => VisionKit;
}

type Factory = (settings: ExtractionSettings, deps: FactoryDeps) => Extractor;

/** `EXTRACTION_PDF_SPLIT`: a large PDF in two halves at once (`PDF_SPLIT`), or never. */
const pdfSplit = (s: ExtractionSettings) => (s.EXTRACTION_PDF_SPLIT ? PDF_SPLIT : false);

/** One entry per concrete engine; `auto` is built over this registry by `createExtractor`. */
const FACTORIES: Record<ConcreteEngine, Factory> = {
  inprocess: (s, d) =>
    createPooledExtractor(d.pool, { name: 'inprocess', limits: extractionLimits(s), pdfSplit: pdfSplit(s) }),
  'pdf-inprocess': (s, d) =>
    createPooledExtractor(d.pool, {
      name: 'pdf-inprocess',
      only: ['pdf'],
      limits: extractionLimits(s),
      pdfSplit: pdfSplit(s),
    }),
  'sidecar-http': (s, d) =>
    createKreuzbergExtractor({
      baseUrl: required(s.EXTRACTION_SIDECAR_URL, 'EXTRACTION_SIDECAR_URL', 'sidecar-http'),
      apiKey: s.EXTRACTION_SIDECAR_API_KEY,
      config: parseSidecarConfig(s.EXTRACTION_SIDECAR_CONFIG),
      timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
      ...fetchOf(d),
    }),
  'doc-layout': (s, d) =>
    createDoclingExtractor({
      baseUrl: required(s.DOCLING_SERVE_URL, 'DOCLING_SERVE_URL', 'doc-layout'),
      apiKey: s.DOCLING_SERVE_API_KEY,
      timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
      ...fetchOf(d),
    }),
  'doc-generic': (s, d) =>
    createUnstructuredExtractor({
      baseUrl: required(s.UNSTRUCTURED_API_URL, 'UNSTRUCTURED_API_URL', 'doc-generic'),
      apiKey: s.UNSTRUCTURED_API_KEY,
      strategy: s.UNSTRUCTURED_STRATEGY,
      timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
      ...fetchOf(d),
    }),
  'vision-llm': (_s, d) => d.vision().visionEngine,
  'hybrid-diagram': (s, d) => {
    const kit = d.vision();
    return createHybridExtractor({
      vision: kit.visionEngine,
      renderPages: kit.renderPages,
      client: kit.client,
      pool: d.pool,
      thresholds: routerThresholds(s),
      languageHint: s.VISION_LLM_LANGUAGE_HINT,
      log: d.log,
    });
  },
};

/** The parts `vision-llm` and `hybrid-diagram` share: the model client, the office and page renderers. */
interface VisionKit {
  client: VisionClient;
  renderPages: PageRenderer;
  visionEngine: Extractor;
  close(): Promise<void>;
}

function visionKit(
  s: ExtractionSettings,
  d: ExtractorDeps & { pool: WorkerPool<ExtractTasks> },
  engine: string,
): VisionKit {
  const net = { ...fetchOf(d), ...(d.clock ? { clock: d.clock } : {}) };
  const client = createVisionClient({
    baseUrl: required(s.VISION_LLM_API_BASE_URL, 'VISION_LLM_API_BASE_URL', engine),
    apiKey: s.VISION_LLM_API_KEY,
    model: s.VISION_LLM_MODEL || missing('VISION_LLM_MODEL', engine),
    maxTokens: s.VISION_LLM_MAX_TOKENS,
    timeoutMs: s.VISION_LLM_TIMEOUT * 1000,
    ...net,
  });
  // The largest PDF taken back from an office renderer: as much as a package may hold uncompressed.
  const maxBytes = s.EXTRACTION_MAX_ARCHIVE_BYTES;
  const office: OfficeRenderer = s.OFFICE_RENDER_URL
    ? createGotenbergRenderer({
        baseUrl: s.OFFICE_RENDER_URL,
        timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
        maxBytes,
        ...net,
      })
    : createLocalOfficeRenderer({
        timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
        maxBytes,
        log: d.log,
        ...(d.clock ? { clock: d.clock } : {}),
      });
  d.log.debug({ engine, office: office.name, dpi: s.VISION_LLM_DPI }, 'vision engine ready');
  const renderPages = createPageRenderer({
    pool: d.pool,
    office,
    dpi: s.VISION_LLM_DPI,
    maxPages: s.VISION_LLM_MAX_PAGES,
    log: d.log,
  });
  return {
    client,
    renderPages,
    visionEngine: createVisionExtractor({ renderPages, client, languageHint: s.VISION_LLM_LANGUAGE_HINT }),
    close: async () => office.close?.(),
  };
}

export function isConcreteEngine(name: string): name is ConcreteEngine {
  return (CONCRETE_ENGINES as readonly string[]).includes(name);
}

/**
 * Builds the extraction engine named by `engine` (an `EXTRACTION_ENGINE` value, `auto` included).
 * Throws a `ConfigError` naming the problem for unknown names and engines whose upstream is not
 * configured. Without `deps.pool`, the engine gets a pool of its own (threads start on first use),
 * closed with it.
 */
export function createExtractor(
  engine: string,
  settings: ExtractionSettings,
  deps: ExtractorDeps,
): Extractor {
  if (engine !== 'auto' && !isConcreteEngine(engine)) {
    throw new ConfigError(
      `Configuration error: unknown extraction engine "${engine}"; choose one of ${EXTRACTION_ENGINES.join(', ')}`,
    );
  }
  const own = deps.pool ? undefined : ownPool(settings, deps);
  const pool = deps.pool ?? own!;
  let kit: VisionKit | undefined;
  const factoryDeps: FactoryDeps = {
    ...deps,
    pool,
    vision: () => {
      kit ??= visionKit(settings, { ...deps, pool }, engine);
      return kit;
    },
  };
  let extractor: Extractor;
  try {
    extractor =
      engine === 'auto' ? autoRouter(settings, factoryDeps) : FACTORIES[engine](settings, factoryDeps);
  } catch (err) {
    void own?.close();
    throw err;
  }
  deps.log.debug({ engine }, 'extraction engine ready');
  if (!own && !kit) return extractor;
  const inner = extractor.close?.bind(extractor);
  return {
    name: extractor.name,
    acceptsProfile: extractor.acceptsProfile,
    ...(extractor.acceptsData ? { acceptsData: true } : {}),
    extract: extractor.extract.bind(extractor),
    ...(extractor.extractMany ? { extractMany: extractor.extractMany.bind(extractor) } : {}),
    ...(extractor.probe ? { probe: extractor.probe.bind(extractor) } : {}),
    async close() {
      await inner?.();
      await kit?.close();
      await own?.close();
    },
  };
}

/** `auto`: the two engines it routes to, built once each (the same one when both settings agree). */
function autoRouter(s: ExtractionSettings, d: FactoryDeps): Extractor {
  const defaultEngine = FACTORIES[s.EXTRACTION_ROUTER_DEFAULT](s, d);
  const diagramEngine =
    s.EXTRACTION_ROUTER_DIAGRAM_ENGINE === s.EXTRACTION_ROUTER_DEFAULT
      ? defaultEngine
      : FACTORIES[s.EXTRACTION_ROUTER_DIAGRAM_ENGINE](s, d);
  return createAutoRouter({
    defaultEngine,
    diagramEngine,
    pool: d.pool,
    thresholds: routerThresholds(s),
    log: d.log,
    ...(d.onRoute ? { onRoute: d.onRoute } : {}),
  });
}

type PoolConfig = Pick<
  ExtractionSettings,
  | 'EXTRACTION_WORKERS'
  | 'EXTRACTION_WARM_WORKERS'
  | 'EXTRACTION_PDF_SPLIT'
  | 'EXTRACTION_PDF_READER'
  | 'EXTRACTION_MAX_HEAP_MB'
  | 'EXTRACTION_TIMEOUT'
  | 'EXTRACTION_MAX_PAGES'
  | 'EXTRACTION_MAX_ARCHIVE_BYTES'
  | 'EXTRACTION_MAX_ARCHIVE_ENTRIES'
  | 'EXTRACTION_MAX_COMPRESSION_RATIO'
  | 'EXTRACTION_MAX_TEXT_CHARS'
  | 'EXTRACTION_MAX_NESTING'
>;

/** A pool for extraction alone, sized and limited by the extraction settings. */
export function ownPool(
  s: PoolConfig,
  deps: { log: Logger; clock?: Clock | undefined },
): WorkerPool<ExtractTasks> {
  return new WorkerPool<ExtractTasks>(
    {
      worker: workerEntry(import.meta.url, 'pool-worker'),
      errors: EXTRACTION_POOL_ERRORS,
      size: s.EXTRACTION_WORKERS,
      warm: s.EXTRACTION_WARM_WORKERS,
      heapMb: s.EXTRACTION_MAX_HEAP_MB,
      timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
      // A worker's preload loads PDFium (preloadExtraction): PDFs go to it (pool-policy.ts, `idleFor`).
      preloads: s.EXTRACTION_PDF_READER === 'pdfjs' ? [] : ['pdf'],
      setup: { limits: extractionLimits(s), pdfReader: s.EXTRACTION_PDF_READER },
    },
    { log: deps.log, ...(deps.clock ? { clock: deps.clock } : {}) },
  );
}

function required(value: string | undefined, variable: string, engine: string): string {
  return value ?? missing(variable, engine);
}

function missing(variable: string, engine: string): never {
  throw new ConfigError(`Configuration error: ${variable} is required by the ${engine} engine`);
}

function parseSidecarConfig(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new ConfigError('Configuration error: EXTRACTION_SIDECAR_CONFIG must be a JSON object');
}

function fetchOf(deps: ExtractorDeps): { fetch?: typeof fetch } {
  return deps.fetch ? { fetch: deps.fetch } : {};
}
