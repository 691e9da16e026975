import type { FastifyRequest } from 'fastify';
import { errors, jwtVerify } from 'jose';
import type { Clock } from '../clock.js';
import { KildeError } from '../errors.js';
import { collectionNameProblem, identifierProblem, normaliseCollectionName } from '../index/identifiers.js';
import { markBearerHook } from './auth.js';
import { noteOnRequestLine } from './request-line.js';

/**
 * Who may call LibreChat's RAG API routes (docs/librechat.md) and which collections they reach.
 *
 * LibreChat signs every call with `jwt.sign({ id: userId }, JWT_SECRET, { expiresIn: '5m',
 * algorithm: 'HS256' })` (its `generateShortLivedToken`) and sends `Authorization: Bearer <jwt>`.
 * rag_api answers a missing header, a bad token and an expired one with 401 and a `detail`; so does
 * Kilde, with the code `UNAUTHORIZED`. Unlike rag_api, `exp` is required (LibreChat always sets it)
 * and only HS256 is accepted.
 *
 * Tenancy: the collection of a file is `<LIBRECHAT_COLLECTION_PREFIX><owner>`, the owner being the
 * `entity_id` LibreChat sends (an agent sharing its files with the agent's users) or else the JWT's
 * user id, as rag_api stores `user_id = entity_id or user id`. A query reads the collection of its
 * `entity_id` and the user's own, as rag_api admits a document whose `user_id` is either: the
 * restriction is a collection filter inside the index query, so nothing of another owner is read.
 */

export interface LibreChatSettings {
  secret: string;
  prefix: string;
  /** Expiry is checked against it (tests pass a manual clock). */
  clock: Clock;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The user id of a verified LibreChat JWT. */
    librechatUser?: string;
  }
}

const unauthorized = (request: FastifyRequest, detail: string, reason = detail) => {
  noteOnRequestLine(request, { reason });
  return new KildeError('UNAUTHORIZED', detail);
};

/** The onRequest hook of every LibreChat route but `/health`: a valid JWT or 401. */
export function libreChatAuth(settings: LibreChatSettings) {
  const key = new TextEncoder().encode(settings.secret);
  return markBearerHook(async function checkLibreChatJwt(request: FastifyRequest) {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || !header.startsWith('Bearer ') || header.length === 7)
      throw unauthorized(request, 'Missing or invalid Authorization header');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(header.slice(7).trim(), key, {
        algorithms: ['HS256'],
        requiredClaims: ['exp'],
        currentDate: new Date(settings.clock.now()),
      }));
    } catch (err) {
      if (err instanceof errors.JWTExpired) throw unauthorized(request, 'Token has expired');
      const why = err instanceof errors.JOSEError ? err.code : 'ERR_UNKNOWN';
      throw unauthorized(request, 'Invalid token', `invalid token (${why})`);
    }
    const id = payload.id;
    if (typeof id !== 'string' || id.trim() === '' || identifierProblem(id) !== undefined)
      throw unauthorized(request, 'Invalid token', 'invalid token (no user id)');
    request.librechatUser = id;
    noteOnRequestLine(request, { librechat_user: id });
  });
}

/** The authenticated user (the hook ran), or 401 should a route be mounted without it. */
export function libreChatUser(request: FastifyRequest): string {
  const user = request.librechatUser;
  if (user === undefined) throw new KildeError('UNAUTHORIZED', 'Missing or invalid Authorization header');
  return user;
}

/** `<prefix><owner>`, or 400 when the owner cannot be part of a collection name. */
export function ownerCollection(prefix: string, owner: string): string {
  const name = normaliseCollectionName(`${prefix}${owner}`);
  const problem = identifierProblem(owner) ?? collectionNameProblem(name);
  if (problem)
    throw new KildeError('INVALID_REQUEST', `entity_id or user id cannot name a collection: ${problem}`);
  return name;
}

/** Whom a file written now belongs to: the `entity_id` when given, else the JWT's user. */
export function ownerOf(request: FastifyRequest, entityId: string | null | undefined): string {
  return entityId ? entityId : libreChatUser(request);
}

/** The collections a read may see: the `entity_id`'s (when given) and the user's own. */
export function readableCollections(
  request: FastifyRequest,
  prefix: string,
  entityId: string | null | undefined,
): string[] {
  const user = ownerCollection(prefix, libreChatUser(request));
  if (!entityId) return [user];
  const entity = ownerCollection(prefix, entityId);
  return entity === user ? [user] : [entity, user];
}

/** Whether `collection` is one of LibreChat's (the prefix is the boundary of what its secret reaches). */
export function isLibreChatCollection(prefix: string, collection: string): boolean {
  return collection.startsWith(prefix) && collection.length > prefix.length;
}
