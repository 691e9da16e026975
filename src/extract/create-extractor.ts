import type { Logger } from 'pino';
import {
  CONCRETE_ENGINES,
  type ConcreteEngine,
  EXTRACTION_ENGINES,
  type ExtractionSettings,
  PLANNED_ENGINES,
} from '../config/extraction.js';
import { ConfigError } from '../config/parse.js';
import { createDoclingExtractor } from './docling-engine.js';
import type { Extractor } from './extractor.js';
import { createInprocessExtractor } from './inprocess-engine.js';
import { createKreuzbergExtractor } from './kreuzberg-engine.js';
import { createUnstructuredExtractor } from './unstructured-engine.js';

export interface ExtractorDeps {
  log: Logger;
  fetch?: typeof fetch;
}

type Factory = (settings: ExtractionSettings, deps: ExtractorDeps) => Extractor;

/**
 * One entry per concrete engine. The vision engines and the `auto` router of the next release add
 * their entries here (the router wraps this registry to build the engines it routes to).
 */
const FACTORIES: Record<ConcreteEngine, Factory> = {
  inprocess: () => createInprocessExtractor({ name: 'inprocess' }),
  'pdf-inprocess': () => createInprocessExtractor({ name: 'pdf-inprocess', only: ['pdf'] }),
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
