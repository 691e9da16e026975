import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import {
  CONCRETE_ENGINES,
  type ConcreteEngine,
  EXTRACTION_ENGINES,
  type ExtractionSettings,
  extractionLimits,
  PLANNED_ENGINES,
} from '../config/extraction.js';
import { ConfigError } from '../config/parse.js';
import { WorkerPool } from '../pool/worker-pool.js';
import { createDoclingExtractor } from './docling-engine.js';
import type { Extractor } from './extractor.js';
import type { FileKind } from './file-type.js';
import { createKreuzbergExtractor } from './kreuzberg-engine.js';
import { createPooledExtractor } from './pooled-engine.js';
import { createUnstructuredExtractor } from './unstructured-engine.js';

export interface ExtractorDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** The worker pool the in-process engines run in; without one, such an engine gets its own. */
  pool?: WorkerPool;
  /** Times an own pool's task limits (tests pass a manual clock). */
  clock?: Clock;
}

type Factory = (settings: ExtractionSettings, deps: ExtractorDeps) => Extractor;

/**
 * One entry per concrete engine. The vision engines and the `auto` router of the next release add
 * their entries here (the router wraps this registry to build the engines it routes to).
 */
const FACTORIES: Record<ConcreteEngine, Factory> = {
  inprocess: (s, d) => pooled('inprocess', undefined, s, d),
  'pdf-inprocess': (s, d) => pooled('pdf-inprocess', ['pdf'], s, d),
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
};

export function isConcreteEngine(name: string): name is ConcreteEngine {
  return (CONCRETE_ENGINES as readonly string[]).includes(name);
}

/**
 * Builds the extraction engine named by `engine` (an `EXTRACTION_ENGINE` value). Throws a
 * `ConfigError` naming the problem for unknown names, names not available in this build and
 * engines whose upstream URL is not configured.
 */
export function createExtractor(
  engine: string,
  settings: ExtractionSettings,
  deps: ExtractorDeps,
): Extractor {
  if (isConcreteEngine(engine)) {
    const extractor = FACTORIES[engine](settings, deps);
    deps.log.debug({ engine }, 'extraction engine ready');
    return extractor;
  }
  if ((PLANNED_ENGINES as readonly string[]).includes(engine) || engine === 'auto') {
    throw new ConfigError(
      `Configuration error: EXTRACTION_ENGINE "${engine}" is not available in this build; choose one of ${CONCRETE_ENGINES.join(', ')}`,
    );
  }
  throw new ConfigError(
    `Configuration error: unknown extraction engine "${engine}"; choose one of ${EXTRACTION_ENGINES.join(', ')}`,
  );
}

function pooled(
  name: string,
  only: readonly FileKind[] | undefined,
  settings: ExtractionSettings,
  deps: ExtractorDeps,
): Extractor {
  const opts = { name, ...(only ? { only } : {}) };
  if (deps.pool) return createPooledExtractor(deps.pool, opts);
  return createPooledExtractor(ownPool(settings, deps), { ...opts, ownsPool: true });
}

type PoolConfig = Pick<
  ExtractionSettings,
  | 'EXTRACTION_WORKERS'
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
export function ownPool(s: PoolConfig, deps: { log: Logger; clock?: Clock | undefined }): WorkerPool {
  return new WorkerPool(
    {
      size: s.EXTRACTION_WORKERS,
      heapMb: s.EXTRACTION_MAX_HEAP_MB,
      timeoutMs: s.EXTRACTION_TIMEOUT * 1000,
      setup: { limits: extractionLimits(s) },
    },
    { log: deps.log, ...(deps.clock ? { clock: deps.clock } : {}) },
  );
}

function required(value: string | undefined, variable: string, engine: string): string {
  if (value === undefined)
    throw new ConfigError(`Configuration error: ${variable} is required by the ${engine} engine`);
  return value;
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
