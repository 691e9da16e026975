import type { Logger } from 'pino';
import type { z } from 'zod';
import { agentSchema } from '../config/agent.js';
import { extractorServiceSchema } from '../config/extraction.js';

import { ingestSchema, workerSchema } from '../config/ingest.js';
import type { KernelConfig } from '../config/kernel.js';
import { type Env, parseConfig } from '../config/parse.js';
import { retrieveSchema } from '../config/retrieve.js';
import { toolsSchema } from '../config/tools.js';
import { allSchema } from '../embedded/all-config.js';
import type { ServicePart } from '../http/app.js';

/** A service's configuration schema: an object schema whose output includes the kernel's settings. */
export type ServiceSchema = z.ZodObject & z.ZodType<KernelConfig>;

/**
 * One `kilde serve <service>`: its config schema (also the source of docs/configuration.md) and how
 * it builds its parts from the configuration that schema parses, typed by that schema (a misspelt
 * variable does not compile). Parts are imported lazily, so `--help` and config errors stay fast.
 */
export interface ServiceDefinition<S extends ServiceSchema> {
  name: string;
  summary: string;
  schema: S;
  create: (config: Readonly<z.output<S>>, log: Logger) => Promise<ServicePart[]>;
}

/** A service whose configuration is parsed and whose parts are not built yet. */
export interface ConfiguredService {
  /** The kernel's view of the parsed configuration (bind address, inbound key, logging, metrics). */
  kernel: KernelConfig;
  create: (log: Logger) => Promise<ServicePart[]>;
}

/**
 * A registry entry. The configuration's own type lives inside `configure`, so services with
 * different schemas share one list without widening their configuration to a record.
 */
export interface Service {
  name: string;
  summary: string;
  schema: z.ZodObject;
  /** Parses `env` with the service's schema (one-line `ConfigError` on a bad value). */
  configure: (env: Env) => ConfiguredService;
}

export function defineService<S extends ServiceSchema>(def: ServiceDefinition<S>): Service {
  return {
    name: def.name,
    summary: def.summary,
    schema: def.schema,
    configure(env) {
      const config = parseConfig(def.schema, env);
      return { kernel: config, create: (log) => def.create(config, log) };
    },
  };
}

export const SERVICES: readonly Service[] = [
  defineService({
    name: 'agent',
    summary: 'LLM agent service: POST /echo',
    schema: agentSchema,
    async create(config) {
      const { createAgentPart } = await import('../agent/part.js');
      const { McpEndpoint } = await import('../mcp/endpoint.js');
      const agent = createAgentPart(config);
      return [agent, new McpEndpoint({ name: 'kilde-agent', settings: config, tools: [agent.mcpTools] })];
    },
  }),
  defineService({
    name: 'tools',
    summary:
      'MCP tool server: POST /mcp (get_weather; search_knowledge with MCP_SEARCH_COLLECTIONS), GET /weather',
    schema: toolsSchema,
    async create(config, log) {
      const { createToolsPart } = await import('../tools/part.js');
      const { McpEndpoint } = await import('../mcp/endpoint.js');
      const weather = createToolsPart(config);
      const parts: ServicePart[] = [weather];
      const tools = [weather.mcpTools];
      if (config.MCP_SEARCH_COLLECTIONS.length > 0) {
        // Knowledge search: the tool server reads the shared index as `kilde serve retrieve` does.
        const { createSearchStack } = await import('../retrieve/search-stack.js');
        const { createKnowledgePart } = await import('../retrieve/knowledge-part.js');
        const stack = await createSearchStack(config, { log });
        const knowledge = createKnowledgePart({
          stack,
          collections: config.MCP_SEARCH_COLLECTIONS,
          ownsStack: true,
        });
        parts.push(knowledge);
        tools.push(knowledge.mcpTools);
      }
      // One `/mcp` with both tool sets, configured once; last, so it serves once the parts have started.
      return [...parts, new McpEndpoint({ name: 'kilde-tools', settings: config, tools })];
    },
  }),
  defineService({
    name: 'ingest',
    summary:
      "ingestion service: PUT /api/v1/ingest, POST /api/v1/extract, DELETE /api/v1/documents/{file_id}, the knowledge API (collections, documents, versions); LibreChat's POST /embed with LIBRECHAT_JWT_SECRET",
    schema: ingestSchema,
    async create(config, log) {
      const { createIngestPart } = await import('../ingest/part.js');
      return withConsole(config, [createIngestPart(config, { log })]);
    },
  }),
  defineService({
    name: 'worker',
    summary:
      'ingestion job worker: runs the jobs of POST /api/v1/jobs from Redis (needs REDIS_URL); health and metrics only',
    schema: workerSchema,
    async create(config, log) {
      const { createIngestPart } = await import('../ingest/part.js');
      return [createIngestPart(config, { log, workerOnly: true })];
    },
  }),
  defineService({
    name: 'retrieve',
    summary:
      "retrieval service: POST /search, POST /retrieval (Dify); LibreChat's POST /query with LIBRECHAT_JWT_SECRET",
    schema: retrieveSchema,
    async create(config, log) {
      const { createRetrievePart } = await import('../retrieve/part.js');
      return withConsole(config, [await createRetrievePart(config, { log })]);
    },
  }),
  defineService({
    name: 'extractor',
    summary: 'Kreuzberg-compatible extraction sidecar: POST /extract (inprocess engine)',
    schema: extractorServiceSchema,
    async create(config, log) {
      const { createExtractorPart } = await import('../extract/sidecar-server.js');
      return [createExtractorPart(config, { log })];
    },
  }),
];

/**
 * `all`: every service's routes on one port over one shared index; its schema is the union of
 * theirs with the embedded defaults on top (src/embedded/all-config.ts).
 */
export const allService: Service = defineService({
  name: 'all',
  summary: 'every service on one port (the embedded, offline mode)',
  schema: allSchema,
  async create(config, log) {
    const { composeAll } = await import('../embedded/compose.js');
    return withConsole(config, (await composeAll(config, log)).parts);
  },
});

/** The web console at `/` joins a service's parts when `CONSOLE_ENABLED` (docs/console.md). */
async function withConsole(
  config: { CONSOLE_ENABLED: boolean },
  parts: ServicePart[],
): Promise<ServicePart[]> {
  if (!config.CONSOLE_ENABLED) return parts;
  const { createConsolePart } = await import('../http/console.js');
  return [...parts, createConsolePart()];
}

export function findService(name: string): Service | undefined {
  if (name === 'all') return allService;
  return SERVICES.find((s) => s.name === name);
}
