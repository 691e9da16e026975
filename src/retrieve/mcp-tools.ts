import { z } from 'zod';
import { KildeError } from '../errors.js';
import { type Access, mayRead } from '../http/access.js';
import type { ChunkMeta } from '../index/contract.js';
import { normaliseCollectionName } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import { RpcCode, ToolError } from '../mcp/json-rpc.js';
import { defineTool } from '../mcp/tool-definition.js';
import { SEARCH_LIMITS } from './routes.js';
import type { SearchService } from './search-service.js';

/**
 * Bounds of `search_knowledge`. MCP arguments skip the REST validator, so the tool applies its own
 * (tool rule 2), clamping rather than refusing where `POST /search` clamps too. Results are compact
 * (tool rules 3–4): a chat client replays them into the model's context on every later turn.
 */
export const MCP_SEARCH_LIMITS = {
  /** Hits per call: `k` is clamped to 1..20. */
  maxK: 20,
  defaultK: 5,
  /** Characters of a hit's text in the result (the REST route returns the whole chunk). */
  textChars: 800,
} as const;

const clampK = (k: number) => Math.min(MCP_SEARCH_LIMITS.maxK, Math.max(1, Math.round(k)));

export const searchKnowledgeArgs = z.object({
  query: z
    .string({ error: 'query must be a string' })
    .trim()
    .min(1, 'query must not be empty')
    .transform((q) => q.slice(0, SEARCH_LIMITS.queryChars))
    .describe('What to look for, in the words of the question (any language).'),
  collection_names: z
    .array(z.string({ error: 'collection_names must be strings' }))
    .optional()
    .describe('Knowledge bases to search (see list_collections); default: every one this server offers.'),
  k: z
    .number({ error: 'k must be a number' })
    .default(MCP_SEARCH_LIMITS.defaultK)
    .transform(clampK)
    .describe(`How many passages to return, 1 to ${MCP_SEARCH_LIMITS.maxK}.`),
});

/** Where a passage comes from, as a person cites it. */
function citation(meta: ChunkMeta) {
  // page_number is 1-based; `page` is Open WebUI's 0-based field.
  const page = meta.page_number ?? (meta.page === undefined ? undefined : meta.page + 1);
  return {
    file: meta.name ?? meta.source ?? meta.file_id,
    ...(page === undefined ? {} : { page }),
    ...(meta.headers?.length ? { headings: meta.headers } : {}),
  };
}

function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length > max ? `${chars.slice(0, max).join('')}…` : text;
}

/** The collections an MCP caller may name: `MCP_SEARCH_COLLECTIONS`, compared in NFC like every name. */
export function collectionPolicy(allowed: readonly string[]) {
  const names = [...new Set(allowed.map(normaliseCollectionName))];
  /** The names offered to a caller: a per-tenant key sees only its own collections among them. */
  const visible = (access: Access | undefined) => names.filter((n) => mayRead(access, n));
  return {
    names,
    visible,
    /** The requested names, or every allowed one; a name outside the list is an invalid argument. */
    resolve(requested: readonly string[] | undefined, access?: Access): string[] {
      const offered = visible(access);
      if (requested === undefined || requested.length === 0) {
        if (offered.length === 0)
          throw new ToolError(RpcCode.InvalidParams, 'No knowledge base is searchable with this key');
        return offered;
      }
      const wanted = [...new Set(requested.map((n) => normaliseCollectionName(n.trim())))];
      const refused = wanted.filter((n) => !offered.includes(n));
      if (refused.length > 0) {
        // Says nothing about whether the collection exists: only that it is not offered here.
        throw new ToolError(
          RpcCode.InvalidParams,
          `Not searchable here: ${refused.map((n) => JSON.stringify(n)).join(', ')} (see list_collections)`,
        );
      }
      return wanted;
    },
  };
}

export type CollectionPolicy = ReturnType<typeof collectionPolicy>;

/**
 * `search_knowledge`: the search service function of `POST /search` (the same object on one app),
 * with the tool's own bounds and a compact result: text truncated, a citation (file, page, headings),
 * the score on the active path's scale.
 */
export function searchKnowledgeTool(service: SearchService, policy: CollectionPolicy) {
  return defineTool({
    name: 'search_knowledge',
    // As `POST /search`: per-tenant keys search their own collections.
    callers: 'scoped',
    doc: `Search the knowledge bases (uploaded documents) for passages relevant to a question.
      Call it when the user asks about something their documents may cover: policies, manuals,
      reports, notes. Returns the best passages with their source file, page and headings, and a
      relevance score in [0, 1]; cite the source when you use a passage. Texts are shortened to
      ${MCP_SEARCH_LIMITS.textChars} characters.`,
    input: searchKnowledgeArgs,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async run(args, ctx) {
      const collections = policy.resolve(args.collection_names, ctx.access);
      await ctx.progress('Searching the knowledge bases', 0, 1);
      const answer = await service
        .search({ queries: [args.query], collection_names: collections, k: args.k })
        .catch((err: unknown) => {
          // The index or the embedder failed (logged with its cause); the user gets a short message.
          if (err instanceof KildeError)
            throw new ToolError(RpcCode.UpstreamUnavailable, 'The knowledge search is unavailable', {
              cause: err,
            });
          throw err;
        });
      ctx.log.debug(
        { pipeline: answer.pipeline, hits: answer.documents[0]?.length ?? 0 },
        'search_knowledge',
      );
      const documents = answer.documents[0] ?? [];
      return JSON.stringify({
        results: documents.map((text, i) => ({
          text: truncate(text, MCP_SEARCH_LIMITS.textChars),
          score: Math.round((answer.distances[0]?.[i] ?? 0) * 1000) / 1000,
          collection: answer.metadatas[0]?.[i]?.collection_name,
          citation: citation(answer.metadatas[0]![i]!),
        })),
      });
    },
  });
}

/** `list_collections`: the knowledge bases this server offers and how many passages each holds. */
export function listCollectionsTool(index: VectorIndex, policy: CollectionPolicy) {
  return defineTool({
    name: 'list_collections',
    // As `GET /api/v1/collections`: a per-tenant key sees its own collections.
    callers: 'scoped',
    doc: `List the knowledge bases search_knowledge can search, with the number of passages in each.
      Call it to find out what the user's documents cover before searching, or when a search names
      a knowledge base that is not offered.`,
    input: z.object({}),
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async run(_args, ctx) {
      const names = policy.visible(ctx.access);
      const counts = await Promise.all(names.map((name) => index.count({ collectionNames: [name] })));
      return JSON.stringify({
        collections: names.map((name, i) => ({ name, passages: counts[i] })),
      });
    },
  });
}
