import { z } from 'zod';
import { agentSchema } from '../config/agent.js';
import { CHUNK_MODES } from '../config/chunking.js';
import { requireVisionEndpoint } from '../config/extraction.js';
import {
  bool,
  documentedAs,
  int,
  oneOf,
  optionalBool,
  optionalOneOf,
  optionalString,
  url,
} from '../config/fields.js';
import { EMBEDDING_PROVIDERS, embeddingPiece, embeddingRules, indexPiece } from '../config/index-settings.js';
import { ingestSchema } from '../config/ingest.js';
import { ConfigError } from '../config/parse.js';
import { retrieveSchema } from '../config/retrieve.js';
import { llmPiece } from '../config/shared.js';
import { mcpPiece, type ToolsConfig, toolsSchema } from '../config/tools.js';
import type { InstalledModel } from '../models/installed.js';

/**
 * Where `kilde serve all` (and `npm start`) differ from the single services: it must start with
 * nothing configured, offline, on one machine. These fields replace the services' own in the merged
 * schema; docs/configuration.md lists them in its `all` section.
 */
export const allOverrides = {
  EMBEDDING_PROVIDER: optionalOneOf(
    EMBEDDING_PROVIDERS,
    'dense embedding backend. Unset: `inprocess` with the model `kilde models install` put in `$KILDE_DATA_DIR/models` (hybrid search; its size, prefixes and token budget, and the table `ingestion_files_<model>`, unless set), else `none` (lexical-only BM25 search over the full-text index). Logged at start-up, with the line that enables dense search when there is none.',
  ),
  EMBEDDING_PREFIX_DOC: documentedAs(
    z.string().optional(),
    optionalString(
      "prepended to each chunk before embedding (trailing space kept). Unset: the installed model's (none for all-MiniLM-L6-v2), else `passage: `.",
    ),
  ),
  EMBEDDING_PREFIX_QUERY: documentedAs(
    z.string().optional(),
    optionalString(
      "prepended to each query before embedding (trailing space kept). Unset: the installed model's (none for all-MiniLM-L6-v2), else `query: `.",
    ),
  ),
  EMBEDDING_MAX_TOKENS: int(
    undefined,
    "the model's input token budget (prefix included); longer inputs are split. Unset: the installed model's (256 for all-MiniLM-L6-v2), else 512.",
    { min: 8 },
  ),
  VECTORDB_INDEX: optionalString(
    'table (LanceDB) / collection (Qdrant). Unset: `ingestion_files`, or `ingestion_files_<model>` with an installed model chosen by an unset `EMBEDDING_PROVIDER` (a lexical-only table has no dense vectors to search).',
  ),
  CHUNK_SPLIT_BY: oneOf(
    CHUNK_MODES,
    'markdown',
    'split on the heading hierarchy first (breadcrumbs for citations), sections packed up to `CHUNK_SIZE` tokens.',
  ),
  ENABLE_SPARSE_EMBEDDINGS: bool(
    true,
    'BM25 `text-sparse` vectors on every point, so a later switch to Qdrant keeps lexical search.',
  ),
  ENABLE_HYBRID_SEARCH: bool(
    true,
    'dense + lexical fusion once a dense provider is configured (lexical alone without one).',
  ),
  ENABLE_QUERY_GENERATION: optionalBool(
    'generate queries from chat `messages` with the LLM; on only when an LLM endpoint is configured.',
    'true when AGENT_API_BASE_URL is set, else false',
  ),
  AGENT_API_BASE_URL: url(
    undefined,
    'OpenAI-compatible LLM endpoint of `/echo`, `rewrite_concisely` and query generation. Unset: `/echo` tries the single-service default and the LLM is left out of `/health/ready`.',
  ),
  WEATHER_API_BASE_URL: url(
    undefined,
    'with `WEATHER_API_KEY`, mounts the tool server (`get_weather` on `/mcp`, `GET /weather`); unset leaves it out.',
  ),
  WEATHER_API_KEY: optionalString(
    'with `WEATHER_API_BASE_URL`, mounts the tool server; unset leaves it out.',
  ),
  MCP_ALLOWED_HOSTS: mcpPiece('kilde').MCP_ALLOWED_HOSTS,
  CONSOLE_ENABLED: bool(
    true,
    'serves the web console at `/` (docs/console.md); `false` leaves only the API.',
  ),
  ENABLE_INSPECTION_API: bool(
    true,
    "serves `GET /api/v1/documents/{file_id}/chunks`, which the web console reads a document's chunks from.",
  ),
};

/**
 * `kilde serve all`'s schema: the union of the member services' variables (the extractor sidecar is
 * not a member) with `allOverrides` on top. Merging shapes drops the services' object-level
 * refinements (ingest and retrieve demand `EMBEDDING_PROVIDER`; here it defaults to `none`), so the
 * dense-provider rules they share, and the vision-endpoint rule, are added again.
 */
export const allSchema = z
  .object({
    ...agentSchema.shape,
    ...toolsSchema.shape,
    ...ingestSchema.shape,
    ...retrieveSchema.shape,
    ...allOverrides,
  })
  .superRefine(embeddingRules)
  .superRefine(requireVisionEndpoint);
export type AllConfig = z.output<typeof allSchema>;

/** The single services' default LLM endpoint, used by `/echo` in `all` when none is configured. */
export const DEFAULT_LLM_URL = llmPiece.AGENT_API_BASE_URL.parse(undefined);

export interface AllChoices {
  /** AGENT_API_BASE_URL was set: the LLM joins readiness and query generation defaults on. */
  llm: boolean;
  /** The weather upstream is configured: the tool server is mounted. */
  tools: boolean;
  /** The installed model the dense side uses because `EMBEDDING_PROVIDER` is unset. */
  model: InstalledModel | undefined;
}

/** The `all` configuration with the fields every member service expects filled in. */
export type ResolvedAllConfig = Readonly<
  AllConfig & {
    AGENT_API_BASE_URL: string;
    ENABLE_QUERY_GENERATION: boolean;
    EMBEDDING_PROVIDER: (typeof EMBEDDING_PROVIDERS)[number];
    EMBEDDING_PREFIX_DOC: string;
    EMBEDDING_PREFIX_QUERY: string;
    EMBEDDING_MAX_TOKENS: number;
    VECTORDB_INDEX: string;
  }
>;

const SERVICE_DEFAULTS = {
  EMBEDDING_PREFIX_DOC: embeddingPiece.EMBEDDING_PREFIX_DOC.parse(undefined),
  EMBEDDING_PREFIX_QUERY: embeddingPiece.EMBEDDING_PREFIX_QUERY.parse(undefined),
  EMBEDDING_MAX_TOKENS: embeddingPiece.EMBEDDING_MAX_TOKENS.parse(undefined),
  VECTORDB_INDEX: indexPiece.VECTORDB_INDEX.parse(undefined),
};

/** The table of an installed model chosen by default: a lexical-only table has no dense vectors. */
export function modelTable(model: string): string {
  return `${SERVICE_DEFAULTS.VECTORDB_INDEX}_${model.replace(/[^A-Za-z0-9]+/g, '_')}`;
}

/**
 * The dense side: what is set wins; with `EMBEDDING_PROVIDER` unset, an installed model (when
 * there is one) is used with its own size, prefixes, token budget and table, else none.
 */
function denseSettings(config: Readonly<AllConfig>, installed: InstalledModel | undefined) {
  const auto = config.EMBEDDING_PROVIDER === undefined ? installed : undefined;
  return {
    EMBEDDING_PROVIDER: config.EMBEDDING_PROVIDER ?? (auto ? 'inprocess' : 'none'),
    EMBEDDING_MODEL: auto ? auto.dir : config.EMBEDDING_MODEL,
    EMBEDDING_DIM: auto ? auto.dim : config.EMBEDDING_DIM,
    EMBEDDING_PREFIX_DOC:
      config.EMBEDDING_PREFIX_DOC ?? auto?.prefixes.doc ?? SERVICE_DEFAULTS.EMBEDDING_PREFIX_DOC,
    EMBEDDING_PREFIX_QUERY:
      config.EMBEDDING_PREFIX_QUERY ?? auto?.prefixes.query ?? SERVICE_DEFAULTS.EMBEDDING_PREFIX_QUERY,
    EMBEDDING_MAX_TOKENS:
      config.EMBEDDING_MAX_TOKENS ?? auto?.maxTokens ?? SERVICE_DEFAULTS.EMBEDDING_MAX_TOKENS,
    VECTORDB_INDEX: config.VECTORDB_INDEX ?? (auto ? modelTable(auto.name) : SERVICE_DEFAULTS.VECTORDB_INDEX),
  } as const;
}

/**
 * Decides what `all` mounts and fills the fields the services expect, from the parsed `all` config
 * and the model `kilde models install` put in place, if any (`preferredModel`).
 */
export function resolveAllConfig(
  config: Readonly<AllConfig>,
  installed?: InstalledModel,
): {
  config: ResolvedAllConfig;
  /** The tool server's configuration, when its upstream is configured; otherwise it is not mounted. */
  tools: ToolsConfig | undefined;
  choices: AllChoices;
} {
  const llm = config.AGENT_API_BASE_URL !== undefined;
  const { WEATHER_API_BASE_URL: weatherUrl, WEATHER_API_KEY: weatherKey } = config;
  if ((weatherUrl === undefined) !== (weatherKey === undefined)) {
    throw new ConfigError(
      'Configuration error: WEATHER_API_BASE_URL and WEATHER_API_KEY must be set together to mount the tool server in `kilde serve all`',
    );
  }
  const resolved = {
    ...config,
    ...denseSettings(config, installed),
    AGENT_API_BASE_URL: config.AGENT_API_BASE_URL ?? DEFAULT_LLM_URL,
    ENABLE_QUERY_GENERATION: config.ENABLE_QUERY_GENERATION ?? llm,
  };
  const tools =
    weatherUrl !== undefined && weatherKey !== undefined
      ? { ...resolved, WEATHER_API_BASE_URL: weatherUrl, WEATHER_API_KEY: weatherKey }
      : undefined;
  const model = config.EMBEDDING_PROVIDER === undefined ? installed : undefined;
  return { config: resolved, tools, choices: { llm, tools: tools !== undefined, model } };
}
