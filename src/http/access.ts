import { readFileSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ConfigError } from '../config/parse.js';
import { KildeError } from '../errors.js';
import { collectionNameSchema } from '../index/identifiers.js';
import { bearerMatches, markBearerHook } from './auth.js';
import { noteOnRequestLine } from './request-line.js';
import { type ForwardedUser, type UserAccessPolicy, withUser } from './user-access.js';

/**
 * Per-tenant API keys (docs/api.md, "Per-tenant keys"). Besides the one `API_KEY` (full access, as
 * the contract has it), `API_KEYS_FILE` and/or `API_KEYS` map extra keys to the collections they may
 * read: `{"<key>": {"collections": ["a", "b"], "name": "dify"}}`. A route that takes collection
 * names admits such keys with `ctx.scopedAuth` and checks the names with `allowedCollections` /
 * `assertCollectionsAllowed`; every other protected route (`ctx.auth`) stays the main key's only.
 */

/**
 * Who a request authenticated as; `user`: the user a trusted chat platform says is asking
 * (src/http/user-access.ts), who may read only their own collections among the key's.
 */
export type Access = ({ kind: 'main' } | { kind: 'tenant'; name: string; collections: readonly string[] }) & {
  user?: ForwardedUser;
};

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the bearer check of a protected route. */
    kildeAccess?: Access;
  }
}

export interface TenantKey {
  key: string;
  name: string;
  collections: readonly string[];
}

const keyEntrySchema = z.strictObject({
  collections: z.array(collectionNameSchema).min(1).max(1000),
  name: z.string().min(1).max(128).optional(),
});

/** Why a key cannot be used, or undefined (keys are compared as ASCII bytes, see auth.ts). */
function keyProblem(key: string): string | undefined {
  if (key.length < 16) return 'a key must have at least 16 characters';
  if (key.length > 512) return 'a key must have at most 512 characters';
  if (!/^[\x21-\x7e]+$/.test(key)) return 'a key is printable ASCII without spaces';
  return undefined;
}

function parseKeys(text: string, where: string): TenantKey[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${where} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be a JSON object {"<key>": {"collections": [...], "name": "..."}}`);
  }
  // Never echo a key: an entry is named by its position.
  return Object.entries(raw).map(([key, value], i) => {
    const at = `${where} (entry ${i + 1})`;
    const problem = keyProblem(key);
    if (problem) throw new ConfigError(`${at}: ${problem}`);
    const entry = keyEntrySchema.safeParse(value);
    if (!entry.success) {
      const issue = entry.error.issues[0]!;
      throw new ConfigError(`${at}: ${[issue.path.join('.'), issue.message].filter(Boolean).join(': ')}`);
    }
    return {
      key,
      name: entry.data.name ?? `key-${i + 1}`,
      collections: [...new Set(entry.data.collections)],
    };
  });
}

/**
 * The per-tenant keys of the configuration; a bad file or value is a `ConfigError` (exit 2), which
 * `kilde serve` raises before any part is built.
 */
export function loadTenantKeys(config: {
  API_KEY: string;
  API_KEYS_FILE?: string | undefined;
  API_KEYS?: string | undefined;
}): TenantKey[] {
  const keys: TenantKey[] = [];
  if (config.API_KEYS_FILE) {
    let text: string;
    try {
      text = readFileSync(config.API_KEYS_FILE, 'utf8');
    } catch (err) {
      throw new ConfigError(
        `Configuration error: API_KEYS_FILE cannot be read (${err instanceof Error ? err.message : String(err)}): point it at a readable JSON file or unset it`,
      );
    }
    keys.push(...parseKeys(text, 'Configuration error: API_KEYS_FILE'));
  }
  if (config.API_KEYS) keys.push(...parseKeys(config.API_KEYS, 'Configuration error: API_KEYS'));
  const seen = new Set<string>([config.API_KEY]);
  for (const k of keys) {
    if (seen.has(k.key))
      throw new ConfigError(
        `Configuration error: per-tenant key "${k.name}" repeats API_KEY or another key: give every key its own value`,
      );
    seen.add(k.key);
  }
  return keys;
}

/**
 * Who the bearer token belongs to, or undefined. Every key is compared, each in constant time
 * (`bearerMatches`), whichever matched: the time does not say which key, or whether one, matched.
 */
export function identify(
  header: string | string[] | undefined,
  mainKey: string,
  tenants: readonly TenantKey[],
) {
  let found: Access | undefined = bearerMatches(header, mainKey) ? { kind: 'main' } : undefined;
  for (const t of tenants) {
    if (bearerMatches(header, t.key) && !found)
      found = { kind: 'tenant', name: t.name, collections: t.collections };
  }
  return found;
}

const INVALID = { detail: 'Invalid API key' };

/**
 * The bearer checks of the kernel: `main` admits the main key only (every route that does not scope
 * its work to collections), `scoped` admits per-tenant keys too (the route checks the collections).
 * Both answer 401 `{"detail":"Invalid API key"}` with `WWW-Authenticate: Bearer` to a wrong key; a
 * tenant key on a main-key route gets 403 FORBIDDEN.
 */
export function accessHooks(mainKey: string, tenants: readonly TenantKey[], users?: UserAccessPolicy) {
  const check = (scoped: boolean) =>
    async function checkBearer(request: FastifyRequest, reply: FastifyReply) {
      const access = identify(request.headers.authorization, mainKey, tenants);
      if (!access) {
        noteOnRequestLine(request, { reason: 'invalid API key' });
        return reply.status(401).header('www-authenticate', 'Bearer').send(INVALID);
      }
      // Routes that read collections narrow a trusted platform's request to the user it names.
      request.kildeAccess = scoped ? await withUser(request, access, users) : access;
      if (access.kind === 'tenant') {
        noteOnRequestLine(request, { key: access.name });
        if (!scoped) {
          return reply.status(403).send({
            detail: 'This API key may only use the routes that search its collections',
            code: 'FORBIDDEN',
          });
        }
      }
      return undefined;
    };
  return { main: markBearerHook(check(false)), scoped: markBearerHook(check(true)) };
}

/** The collections the request's key may read; undefined: all of them (the main key). */
export function allowedCollections(request: FastifyRequest): readonly string[] | undefined {
  const access = request.kildeAccess;
  // A route without a bearer check has no access set: nothing was authenticated, nothing is implied.
  if (!access) return undefined;
  const byKey = access.kind === 'main' ? undefined : access.collections;
  if (!access.user) return byKey;
  return byKey ? access.user.collections.filter((c) => byKey.includes(c)) : access.user.collections;
}

/** Whether `access` (undefined: unauthenticated, e.g. an open /mcp) may read `name`. */
export function mayRead(access: Access | undefined, name: string): boolean {
  if (access === undefined) return true;
  if (access.user && !access.user.collections.includes(name)) return false;
  return access.kind === 'main' || access.collections.includes(name);
}

/**
 * Throws 403 FORBIDDEN unless the request's key may read every one of `names`. The message names
 * the refused collections as the caller gave them; it says nothing about whether they exist.
 */
export function assertCollectionsAllowed(request: FastifyRequest, names: readonly string[]): void {
  const access = request.kildeAccess;
  const refused = names.filter((n) => !mayRead(access, n));
  if (refused.length === 0) return;
  throw new KildeError(
    'FORBIDDEN',
    `${access?.user ? 'This user' : 'This API key'} may not read ${refused.map((n) => JSON.stringify(n)).join(', ')}`,
  );
}
