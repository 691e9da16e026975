import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { noteOnRequestLine } from './request-line.js';

const PREFIX = 'Bearer ';

/**
 * The one bearer comparison used by every protected REST route and by the MCP guard.
 * The header must start with `Bearer ` (case-sensitive); the rest is trimmed and compared in
 * constant time as UTF-8 bytes. Non-ASCII tokens never match (and never throw).
 */
export function bearerMatches(header: string | string[] | undefined, apiKey: string): boolean {
  if (typeof header !== 'string' || !header.startsWith(PREFIX)) return false;
  const token = header.slice(PREFIX.length).trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII range check
  if (token.length === 0 || !/^[\x00-\x7f]*$/.test(token)) return false;
  const given = Buffer.from(token, 'utf8');
  const expected = Buffer.from(apiKey, 'utf8');
  // Compare against a same-length buffer so the time does not depend on where a mismatch is.
  const same = given.length === expected.length;
  return timingSafeEqual(same ? given : expected, expected) && same;
}

/** The bearer hooks made here: the OpenAPI document marks the routes they guard (src/http/openapi.ts). */
const BEARER_HOOKS = new WeakSet<object>();

export function isBearerHook(hook: unknown): boolean {
  return typeof hook === 'function' && BEARER_HOOKS.has(hook);
}

/** Marks a bearer hook made elsewhere (the per-tenant hooks of access.ts, Dify's) for the OpenAPI document. */
export function markBearerHook<T extends object>(hook: T): T {
  BEARER_HOOKS.add(hook);
  return hook;
}

/** Fastify onRequest hook: 401 `{"detail":"Invalid API key"}` with `WWW-Authenticate: Bearer`. */
export function requireBearer(apiKey: string) {
  const hook = async function checkBearer(request: FastifyRequest, reply: FastifyReply) {
    if (bearerMatches(request.headers.authorization, apiKey)) return;
    noteOnRequestLine(request, { reason: 'invalid API key' });
    return reply.status(401).header('www-authenticate', 'Bearer').send({ detail: 'Invalid API key' });
  };
  BEARER_HOOKS.add(hook);
  return hook;
}
