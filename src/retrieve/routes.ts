import { z } from 'zod';
import { assertCollectionsAllowed } from '../http/access.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { toFilterInstant } from '../index/contract.js';
import { collectionNameSchema, identifierRefinement } from '../index/identifiers.js';
import type { ExtraFilter } from './explain.js';

import { asSearchError } from './search-error.js';
import type { SearchService } from './search-service.js';

/**
 * Bounds of a search request. A chat turn is never refused for being large (a long paste, a long
 * chat, many attached knowledge bases): past a bound the request is clamped, so retrieval still runs
 * on what matters most. Only malformed requests get a 422. The JSON body itself is capped at 10 MB.
 */
export const SEARCH_LIMITS = {
  /** Explicit queries searched (the first ones). */
  queries: 10,
  /** Characters of a query (and of the last user message used as one) that are searched. */
  queryChars: 2000,
  /** Chat messages kept (the last ones); the query generator sees fewer (QUERY_GENERATION_MESSAGES). */
  messages: 50,
  /** Characters kept of one message (the first ones) for building queries. */
  messageChars: 8000,
  /** Text parts of one message kept. */
  parts: 100,
  /** Collections searched at once (the first ones). */
  collections: 200,
  /** Hits per query. */
  k: 100,
} as const;

/** `k` when a request gives none. */
export const SEARCH_DEFAULT_K = 5;

const clip = (max: number) => (s: string) => (s.length > max ? s.slice(0, max) : s);

/**
 * Message content may be a string or OpenAI-style parts; only the text parts are searched. Raw chat
 * messages carry `content: null` on an assistant turn that only calls tools: that is no text.
 */
const content = z
  .union([
    z.string(),
    z.null().transform(() => ''),
    z.array(z.object({ type: z.string(), text: z.string().nullish() })).transform((parts) =>
      parts
        .slice(0, SEARCH_LIMITS.parts)
        .map((p) => p.text ?? '')
        .filter(Boolean)
        .join('\n'),
    ),
  ])
  .transform(clip(SEARCH_LIMITS.messageChars));

/** A filter value: an identifier (no control characters, well-formed Unicode), matched literally. */
const filterValue = (name: string, max: number) =>
  z.string().min(1).max(max).superRefine(identifierRefinement(name));

const filterInstant = (name: string) =>
  z.string().transform((value, ctx) => {
    const instant = toFilterInstant(value);
    if (instant === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `${name} must be an ISO 8601 date or date-time (years 0000–9999)`,
      });
      return z.NEVER;
    }
    return instant;
  });

/**
 * `filter` (Kilde extension): AND-ed with the tenant filter inside the index query. Lists match any
 * of their values; every given field must hold. Unknown fields are refused (a misspelt field would
 * otherwise widen the search silently).
 */
export const searchFilter = z
  .strictObject({
    file_ids: z.array(filterValue('file_ids', 512)).min(1).max(1000).optional(),
    languages: z
      .array(
        z
          .string()
          .regex(/^[A-Za-z]{2,3}$/, 'languages are ISO 639 codes (two or three letters)')
          .transform((l) => l.toLowerCase()),
      )
      .min(1)
      .max(50)
      .optional(),
    collection_types: z.array(filterValue('collection_types', 256)).min(1).max(100).optional(),
    source_prefix: filterValue('source_prefix', 2048).optional(),
    created_after: filterInstant('created_after').optional(),
    created_before: filterInstant('created_before').optional(),
  })
  .superRefine((f, ctx) => {
    if (
      f.created_after !== undefined &&
      f.created_before !== undefined &&
      f.created_after >= f.created_before
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['created_before'],
        message: 'created_before must be after created_after',
      });
    }
  })
  .transform(
    (f): ExtraFilter => ({
      ...(f.file_ids ? { fileIds: [...new Set(f.file_ids)] } : {}),
      ...(f.languages ? { languages: [...new Set(f.languages)] } : {}),
      ...(f.collection_types ? { collectionTypes: [...new Set(f.collection_types)] } : {}),
      ...(f.source_prefix !== undefined ? { sourcePrefix: f.source_prefix } : {}),
      ...(f.created_after !== undefined ? { createdAfter: f.created_after } : {}),
      ...(f.created_before !== undefined ? { createdBefore: f.created_before } : {}),
    }),
  );

/** `pipeline` (Kilde extension): choices among the modes the server has configured. */
export const pipelineToggles = z.strictObject({
  hybrid: z.boolean().optional(),
  rerank: z.boolean().optional(),
  agentic: z.boolean().optional(),
});

export const searchBody = z
  .object({
    queries: z
      .array(z.string().transform(clip(SEARCH_LIMITS.queryChars)))
      .transform((q) => q.slice(0, SEARCH_LIMITS.queries))
      .optional(),
    messages: z
      .array(z.object({ role: z.string().min(1).max(64), content }))
      .transform((m) => m.slice(-SEARCH_LIMITS.messages))
      .optional(),
    collection_names: z
      .array(collectionNameSchema)
      .min(1)
      .transform((c) => [...new Set(c)].slice(0, SEARCH_LIMITS.collections)),
    // 0 (a chat platform's "unset") and null mean the default, as an absent `k` does.
    k: z
      .number()
      .int()
      .min(0)
      .nullish()
      .transform((k) => (k ? Math.min(k, SEARCH_LIMITS.k) : SEARCH_DEFAULT_K)),
    filter: searchFilter.optional(),
    pipeline: pipelineToggles.optional(),
    explain: z.boolean().optional(),
  })
  .superRefine((b, ctx) => {
    // Without explicit queries the last user message is the fallback query (`resolveQueries`), so a
    // conversation without a user turn is malformed. A turn whose query or user message holds no
    // text (an image alone: Open WebUI sends `queries: [""]`) is not: it finds nothing (200).
    const hasQueries = (b.queries ?? []).length > 0;
    const hasUserTurn = (b.messages ?? []).some((m) => m.role === 'user');
    if (!hasQueries && !hasUserTurn) {
      ctx.addIssue({
        code: 'custom',
        path: ['queries'],
        message: 'give at least one query or user message',
      });
    }
  });

const branchRank = z.object({ rank: z.number().int(), score: z.number() }).nullable();

export const explanationSchema = z.object({
  path: z.enum(['dense', 'lexical', 'hybrid', 'rerank', 'fallback', 'agentic']),
  dense: branchRank,
  lexical: branchRank,
  fused: z.number().nullable(),
  rerank: z.number().nullable(),
  score: z.number(),
});

export const timingsSchema = z.object({
  total: z.number(),
  queries: z.number().optional(),
  embed: z.number().optional(),
  search: z.number().optional(),
  rerank: z.number().optional(),
  agent: z.number().optional(),
});

const searchResponse = z.object({
  documents: z.array(z.array(z.string())),
  metadatas: z.array(z.array(z.record(z.string(), z.unknown()))),
  distances: z.array(z.array(z.number())),
  // Only with `explain: true`; absent, the answer is the reference one byte for byte.
  explanations: z.array(z.array(explanationSchema)).optional(),
  timings_ms: timingsSchema.optional(),
});

/** Response header naming the pipeline that answered a search: `linear` or `agentic`. */
export const PIPELINE_HEADER = 'x-kilde-pipeline';

export function registerSearchRoutes(app: KildeApp, ctx: PartContext, service: SearchService) {
  // `//search` (a trailing-slash base URL joined by the chat platform) reaches this route too:
  // the kernel's router ignores duplicate slashes.
  app.post(
    '/search',
    {
      onRequest: ctx.scopedAuth,
      bodyLimit: BODY_LIMITS.search,
      config: { jsonShape: JSON_SHAPES.search },
      schema: {
        operationId: 'search',
        summary: 'Search collections: one ranked list of chunks per query (or one fused list)',
        description:
          'The retrieval contract of the chat platform: `documents`, `metadatas` and `distances` are parallel lists, higher scores better, strictly filtered to `collection_names`. See docs/api.md.',
        body: searchBody,
        response: { 200: searchResponse },
      },
    },
    async (request, reply) => {
      // A per-tenant key searches only its collections (403 FORBIDDEN otherwise).
      assertCollectionsAllowed(request, request.body.collection_names);
      const { queries, pipeline, agent, ...lists } = await service
        .search(request.body)
        .catch((err: unknown) => {
          throw asSearchError(err);
        });
      // Which pipeline answered, for operators and for clients comparing the two.
      reply.header(PIPELINE_HEADER, pipeline);
      noteOnRequestLine(request, {
        pipeline,
        queries: queries.length,
        k: request.body.k,
        hits: lists.documents.map((d) => d.length),
        ...(agent ? { agent } : {}),
      });
      return lists;
    },
  );
}
