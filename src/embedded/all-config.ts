import { z } from 'zod';
import { agentSchema } from '../config/agent.js';
import { CHUNK_MODES } from '../config/chunking.js';
import { requireVisionEndpoint } from '../config/extraction.js';
import { bool, oneOf, optionalBool, optionalString, url } from '../config/fields.js';
import { EMBEDDING_PROVIDERS, embeddingRules } from '../config/index-settings.js';
import { ingestSchema } from '../config/ingest.js';
import { ConfigError } from '../config/parse.js';
import { retrieveSchema } from '../config/retrieve.js';
import { llmPiece } from '../config/shared.js';
import { mcpPiece, type ToolsConfig, toolsSchema } from '../config/tools.js';

/**
 * Where `kilde serve all` (and `npm start`) differ from the single services: it must start with
 * nothing configured, offline, on one machine. These fields replace the services' own in the merged
 * schema; docs/configuration.md lists them in its `all` section.
 */
export const allOverrides = {
  EMBEDDING_PROVIDER: oneOf(
    EMBEDDING_PROVIDERS,
    'none',
    'dense embedding backend; unset means `none` (lexical-only BM25 search over the full-text index), logged at start-up with the line that enables dense search.',
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
}

/** The `all` configuration with the fields every member service expects filled in. */
export type ResolvedAllConfig = Readonly<
  AllConfig & { AGENT_API_BASE_URL: string; ENABLE_QUERY_GENERATION: boolean }
>;

/** Decides what `all` mounts and fills the fields the services expect, from the parsed `all` config. */
export function resolveAllConfig(config: Readonly<AllConfig>): {
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
    AGENT_API_BASE_URL: config.AGENT_API_BASE_URL ?? DEFAULT_LLM_URL,
    ENABLE_QUERY_GENERATION: config.ENABLE_QUERY_GENERATION ?? llm,
  };
  const tools =
    weatherUrl !== undefined && weatherKey !== undefined
      ? { ...resolved, WEATHER_API_BASE_URL: weatherUrl, WEATHER_API_KEY: weatherKey }
      : undefined;
  return { config: resolved, tools, choices: { llm, tools: tools !== undefined } };
}
