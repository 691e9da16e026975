import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerMatches } from '../http/auth.js';

export const GUARD_MESSAGE = 'missing or invalid bearer token';

/**
 * The optional `/mcp` bearer guard (`MCP_BEARER_AUTH=true`). It is an onRequest hook, so it only
 * decides whether the request goes on: it never wraps, buffers or rewrites the response, and the
 * SDK's event stream flows through untouched. It uses the same comparison as the REST routes.
 */
export function bearerGuard(apiKey: string) {
  return async function guardMcp(request: FastifyRequest, reply: FastifyReply) {
    if (bearerMatches(request.headers.authorization, apiKey)) return;
    request.log.info({ path: request.url.split('?')[0] }, 'mcp: rejected missing or invalid bearer token');
    return reply
      .status(401)
      .header('www-authenticate', 'Bearer')
      .header('content-type', 'text/plain; charset=utf-8')
      .send(GUARD_MESSAGE);
  };
}
