import { z } from 'zod';
import type { KildeApp, PartContext } from '../http/app.js';
import { BODY_LIMITS } from '../http/body-limits.js';
import { KildeError } from '../http/errors.js';
import type { SearchService } from './search-service.js';

/**
 * Message content may be a string or OpenAI-style parts; only the text parts are searched. Raw chat
 * messages carry `content: null` on an assistant turn that only calls tools: that is no text.
 */
const content = z.union([
  z.string().max(100_000),
  z.null().transform(() => ''),
  z
    .array(z.object({ type: z.string(), text: z.string().optional() }))
    .max(100)
    .transform((parts) =>
      parts
        .map((p) => p.text ?? '')
        .filter(Boolean)
        .join('\n'),
    ),
]);

export const searchBody = z
  .object({
    queries: z.array(z.string().max(2000)).max(10).optional(),
    messages: z
      .array(z.object({ role: z.string().min(1).max(64), content }))
      .max(50)
      .optional(),
    collection_names: z
      .array(z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must match ^[A-Za-z0-9_-]{1,128}$'))
      .min(1)
      .max(20),
    k: z.number().int().min(1).max(100).default(5),
  })
  .superRefine((b, ctx) => {
    const hasQuery = (b.queries ?? []).some((q) => q.trim().length > 0);
    // Without explicit queries the last user message is the fallback query (`resolveQueries`), so a
    // conversation without one would leave nothing to search when query generation is off or fails.
    const hasUserMessage = (b.messages ?? []).some((m) => m.role === 'user' && m.content.trim().length > 0);
    if (!hasQuery && !hasUserMessage) {
      ctx.addIssue({
        code: 'custom',
        path: ['queries'],
        message: 'give at least one non-empty query or user message',
      });
    }
  });

const searchResponse = z.object({
  documents: z.array(z.array(z.string())),
  metadatas: z.array(z.array(z.record(z.string(), z.unknown()))),
  distances: z.array(z.array(z.number())),
});

/** A failure that is not Kilde's own becomes SEARCH_FAILED; the kernel hides 5xx messages. */
function asSearchError(err: unknown): unknown {
  return err instanceof KildeError ? err : new KildeError('SEARCH_FAILED', 'Search failed', { cause: err });
}

export function registerSearchRoutes(app: KildeApp, ctx: PartContext, service: SearchService) {
  // `//search` (a trailing-slash base URL joined by the chat platform) reaches this route too:
  // the kernel's router ignores duplicate slashes.
  app.post(
    '/search',
    {
      onRequest: ctx.auth,
      bodyLimit: BODY_LIMITS.search,
      schema: { body: searchBody, response: { 200: searchResponse } },
    },
    async (request) => {
      const { queries, ...lists } = await service.search(request.body).catch((err: unknown) => {
        throw asSearchError(err);
      });
      request.log.info({ queries: queries.length, k: request.body.k }, 'search');
      return lists;
    },
  );
}
