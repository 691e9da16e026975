import type { FastifyReply, FastifyRequest } from 'fastify';
import { identify, type TenantKey } from '../http/access.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { type UserAccessPolicy, withUser } from '../http/user-access.js';

export const GUARD_MESSAGE = 'missing or invalid bearer token';

/**
 * The optional `/mcp` bearer guard (`MCP_BEARER_AUTH=true`). It is an onRequest hook, so it only
 * decides whether the request goes on: it never wraps, buffers or rewrites the response, and the
 * SDK's event stream flows through untouched. It uses the same comparison as the REST routes, and
 * admits per-tenant keys too: the knowledge tools then offer only that key's collections (and, from
 * a key trusted to name users, only that user's).
 */
export function bearerGuard(apiKey: string, tenants: readonly TenantKey[] = [], users?: UserAccessPolicy) {
  return async function guardMcp(request: FastifyRequest, reply: FastifyReply) {
    // A CORS preflight carries no credentials (browsers never send them on one): it is answered
    // without the key, by CORS when CORS_ORIGINS names origins, else as a route that is not there.
    if (request.method === 'OPTIONS') return;
    const access = identify(request.headers.authorization, apiKey, tenants);
    if (access) {
      // A trusted platform's request is narrowed to the user it names (src/http/user-access.ts).
      request.kildeAccess = await withUser(request, access, users);
      // As the REST routes do: the request line says which tenant's key called.
      if (access.kind === 'tenant') noteOnRequestLine(request, { key: access.name });
      return;
    }
    request.log.info({ path: request.url.split('?')[0] }, 'mcp: rejected missing or invalid bearer token');
    return reply
      .status(401)
      .header('www-authenticate', 'Bearer')
      .header('content-type', 'text/plain; charset=utf-8')
      .send(GUARD_MESSAGE);
  };
}
