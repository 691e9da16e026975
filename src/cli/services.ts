import type { Logger } from 'pino';
import { z } from 'zod';
import { agentSchema } from '../config/agent.js';
import { extractorServiceSchema } from '../config/extraction.js';
import { ingestSchema } from '../config/ingest.js';
import { retrieveSchema } from '../config/retrieve.js';
import { toolsSchema } from '../config/tools.js';
import { allOverrides } from '../embedded/all-config.js';
import type { ServicePart } from '../http/app.js';

/**
 * The registry behind `kilde serve <service>`. Each entry names its config schema (also the source
 * of docs/configuration.md) and builds its parts lazily, so `--help` and config errors stay fast.
 */
export interface ServiceDef {
  name: string;
  summary: string;
  schema: z.ZodObject;
  create: (config: Readonly<Record<string, unknown>>, log: Logger) => Promise<ServicePart[]>;
}

export const SERVICES: readonly ServiceDef[] = [
  {
    name: 'agent',
    summary: 'LLM agent service: POST /echo',
    schema: agentSchema,
    async create(config) {
      const { createAgentPart } = await import('../agent/part.js');
      return [createAgentPart(config as z.output<typeof agentSchema>)];
    },
  },
  {
    name: 'tools',
    summary: 'MCP tool server: POST /mcp (get_weather), GET /weather',
    schema: toolsSchema,
    async create(config) {
      const { createToolsPart } = await import('../tools/part.js');
      return [createToolsPart(config as z.output<typeof toolsSchema>)];
    },
  },
  {
    name: 'ingest',
    summary:
      'ingestion service: PUT /api/v1/ingest, POST /api/v1/extract, DELETE /api/v1/documents/{file_id}',
    schema: ingestSchema,
    async create(config, log) {
      const { createIngestPart } = await import('../ingest/part.js');
      return [createIngestPart(config as z.output<typeof ingestSchema>, { log })];
    },
  },
  {
    name: 'retrieve',
    summary: 'retrieval service: POST /search',
    schema: retrieveSchema,
    async create(config, log) {
      const { createRetrievePart } = await import('../retrieve/part.js');
      return [await createRetrievePart(config as z.output<typeof retrieveSchema>, { log })];
    },
  },
  {
    name: 'extractor',
    summary: 'Kreuzberg-compatible extraction sidecar: POST /extract (inprocess engine)',
    schema: extractorServiceSchema,
    async create(config) {
      const { createExtractorPart } = await import('../extract/sidecar-server.js');
      return [createExtractorPart(config as z.output<typeof extractorServiceSchema>)];
    },
  },
];

/**
 * `all`: every service's routes on one port over one shared index; its schema is the union of
 * theirs with the embedded defaults of `allOverrides` on top (lexical-only, markdown chunks, ...).
 */
export function allService(): ServiceDef {
  const members = SERVICES.filter((s) => s.name !== 'extractor');
  const shape = Object.assign({}, ...members.map((s) => s.schema.shape), allOverrides) as z.ZodRawShape;
  return {
    name: 'all',
    summary: 'every service on one port (the embedded, offline mode)',
    schema: z.object(shape),
    async create(config, log) {
      const { composeAll } = await import('../embedded/compose.js');
      return (await composeAll(config, log)).parts;
    },
  };
}

export function findService(name: string): ServiceDef | undefined {
  if (name === 'all') return allService();
  return SERVICES.find((s) => s.name === name);
}
