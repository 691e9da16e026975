import { readFileSync } from 'node:fs';
import type { FastifyRequest } from 'fastify';
import { errors, jwtVerify } from 'jose';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../config/parse.js';
import { KildeError } from '../errors.js';
import { collectionNameSchema } from '../index/identifiers.js';
import type { Access, TenantKey } from './access.js';
import { noteOnRequestLine } from './request-line.js';

/**
 * Per-user access behind a chat platform (docs/integrations.md, "Per-user access"). Open WebUI calls
 * Kilde with one key for all its users; on its tool-server connections it can add who is asking:
 * `ENABLE_FORWARD_USER_INFO_HEADERS=true` sends `X-OpenWebUI-User-Id`, `-Email`, `-Name`, `-Role`
 * (`backend/open_webui/utils/headers.py`, `include_user_info_headers`), and a connection's `headers`
 * are templates (`{{USER_ID}}`, `{{USER_EMAIL}}`, `{{USER_GROUPS}}`: the group names joined by ",",
 * `{{USER_GROUP_IDS}}`, `{{CHAT_ID}}`…, each value URL-quoted after substitution, `parse_custom_headers`).
 *
 * Trust: those headers are only believed from a key listed in `trusted_keys`, a key that belongs to
 * the platform (which sets them from its own session, never from the browser). A request from any
 * other key is judged by its key alone, whatever headers it carries. A request from a trusted key
 * that names a user (any of the headers present, even empty) may read only the collections mapped to
 * that user's groups, id or email (and `default`), and among those only what the key allows: the
 * narrowing is applied to the request's `Access`, so every collection check (`mayRead`,
 * `allowedCollections`, `assertCollectionsAllowed`) and with it the index query's collection filter
 * sees it. A request from a trusted key without user headers keeps the key's access, unless
 * `require_user` is set, which then gives it nothing.
 *
 * Signed identity: with `FORWARD_USER_INFO_HEADER_JWT_SECRET` set, Open WebUI sends one HS256 JWT in
 * `X-OpenWebUI-User-Jwt` (`sub` = user id, `email`, `name`, `role`, `iss: open-webui`, `exp`;
 * `_mint_forward_user_jwt` in `utils/headers.py`) instead of the `X-OpenWebUI-User-*` headers. With
 * the same secret in `USER_ACCESS_JWT_SECRET`, a trusted request's JWT is verified (HS256 only, `exp`
 * and `sub` required, issuer `open-webui`) and its `sub` and `email` name the user; the plain id and
 * e-mail headers are then ignored, and a request from a trusted key that carries a JWT that does not
 * verify is refused (401). Groups still come from the `{{USER_GROUPS}}` / `{{USER_GROUP_IDS}}`
 * templates: the JWT carries none.
 */

const names = z.array(collectionNameSchema).max(1000);

const fileSchema = z.strictObject({
  trusted_keys: z.array(z.string().min(1).max(128)).min(1),
  groups: z.record(z.string().min(1).max(256), names).default({}),
  users: z.record(z.string().min(1).max(320), names).default({}),
  default: names.default([]),
  require_user: z.boolean().default(false),
  headers: z
    .strictObject({
      user_id: z.string().min(1).default('X-OpenWebUI-User-Id'),
      user_email: z.string().min(1).default('X-OpenWebUI-User-Email'),
      groups: z.string().min(1).default('X-OpenWebUI-User-Groups'),
      group_ids: z.string().min(1).default('X-OpenWebUI-User-Group-Ids'),
      user_jwt: z.string().min(1).default('X-OpenWebUI-User-Jwt'),
    })
    .default({
      user_id: 'X-OpenWebUI-User-Id',
      user_email: 'X-OpenWebUI-User-Email',
      groups: 'X-OpenWebUI-User-Groups',
      group_ids: 'X-OpenWebUI-User-Group-Ids',
      user_jwt: 'X-OpenWebUI-User-Jwt',
    }),
});

/** The name `trusted_keys` gives the main `API_KEY`. */
export const MAIN_KEY_NAME = 'API_KEY';

export interface UserAccessPolicy {
  /** Names of the keys whose user headers are believed (`API_KEY` for the main key). */
  trustedKeys: ReadonlySet<string>;
  groups: ReadonlyMap<string, readonly string[]>;
  /** By user id, and by e-mail address in lower case. */
  users: ReadonlyMap<string, readonly string[]>;
  default: readonly string[];
  requireUser: boolean;
  /** Header names, lower case. */
  headers: { userId: string; userEmail: string; groups: string; groupIds: string; userJwt: string };
  /** Open WebUI's `FORWARD_USER_INFO_HEADER_JWT_SECRET` (`USER_ACCESS_JWT_SECRET`), when set. */
  jwtSecret?: Uint8Array;
}

/** Who a trusted request says is asking, and what that user may read. */
export interface ForwardedUser {
  id: string;
  /** The user's collections, before the key's own limit (`mayRead` applies both). */
  collections: readonly string[];
}

function parsePolicy(
  text: string,
  where: string,
  tenants: readonly TenantKey[],
  jwtSecret: string | undefined,
): UserAccessPolicy {
  let raw: unknown;
  try {
    // YAML 1.2 reads JSON as well.
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(
      `${where} is neither JSON nor YAML: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${where}: ${[issue.path.join('.'), issue.message].filter(Boolean).join(': ')}`);
  }
  const f = parsed.data;
  const known = new Set([MAIN_KEY_NAME, ...tenants.map((t) => t.name)]);
  const unknown = f.trusted_keys.filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw new ConfigError(
      `${where}: trusted_keys names no key ${unknown.map((k) => JSON.stringify(k)).join(', ')}: use a per-tenant key's "name" (API_KEYS_FILE / API_KEYS) or ${MAIN_KEY_NAME}`,
    );
  }
  const dedupe = (list: readonly string[]) => [...new Set(list)];
  const users = new Map<string, readonly string[]>();
  for (const [who, list] of Object.entries(f.users)) {
    const key = who.includes('@') ? who.toLowerCase() : who;
    users.set(key, dedupe([...(users.get(key) ?? []), ...list]));
  }
  return {
    trustedKeys: new Set(f.trusted_keys),
    groups: new Map(Object.entries(f.groups).map(([g, list]) => [g, dedupe(list)])),
    users,
    default: dedupe(f.default),
    requireUser: f.require_user,
    headers: {
      userId: f.headers.user_id.toLowerCase(),
      userEmail: f.headers.user_email.toLowerCase(),
      groups: f.headers.groups.toLowerCase(),
      groupIds: f.headers.group_ids.toLowerCase(),
      userJwt: f.headers.user_jwt.toLowerCase(),
    },
    ...(jwtSecret ? { jwtSecret: new TextEncoder().encode(jwtSecret) } : {}),
  };
}

/**
 * The per-user access of the configuration, or undefined when none is set; a bad file or value, or a
 * trusted key that is not configured, is a `ConfigError` (exit 2).
 */
export function loadUserAccess(
  config: {
    USER_ACCESS_FILE?: string | undefined;
    USER_ACCESS?: string | undefined;
    USER_ACCESS_JWT_SECRET?: string | undefined;
  },
  tenants: readonly TenantKey[],
): UserAccessPolicy | undefined {
  if (config.USER_ACCESS_FILE && config.USER_ACCESS) {
    throw new ConfigError('Configuration error: set USER_ACCESS_FILE or USER_ACCESS, not both');
  }
  const secret = config.USER_ACCESS_JWT_SECRET;
  if (secret && !config.USER_ACCESS && !config.USER_ACCESS_FILE) {
    throw new ConfigError(
      'Configuration error: USER_ACCESS_JWT_SECRET is set without USER_ACCESS_FILE or USER_ACCESS: the JWT names a user only for the keys a policy trusts',
    );
  }
  if (config.USER_ACCESS)
    return parsePolicy(config.USER_ACCESS, 'Configuration error: USER_ACCESS', tenants, secret);
  if (!config.USER_ACCESS_FILE) return undefined;
  let text: string;
  try {
    text = readFileSync(config.USER_ACCESS_FILE, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `Configuration error: USER_ACCESS_FILE cannot be read (${err instanceof Error ? err.message : String(err)}): point it at a readable JSON or YAML file or unset it`,
    );
  }
  return parsePolicy(text, 'Configuration error: USER_ACCESS_FILE', tenants, secret);
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** Open WebUI URL-quotes template values (`quote(value, safe=punctuation + ' \t')`). */
function unquote(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A comma-separated list of group names or ids, as `{{USER_GROUPS}}` / `{{USER_GROUP_IDS}}` give it. */
function list(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((g) => unquote(g).trim())
    .filter(Boolean);
}

/** The identity of a verified `X-OpenWebUI-User-Jwt`, or a 401 naming what is wrong with it. */
async function verifiedJwt(
  request: FastifyRequest,
  token: string,
  secret: Uint8Array,
): Promise<{ id: string; email: string }> {
  const refuse = (detail: string, reason: string) => {
    noteOnRequestLine(request, { reason });
    return new KildeError('UNAUTHORIZED', detail);
  };
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token.trim(), secret, {
      algorithms: ['HS256'],
      issuer: 'open-webui',
      requiredClaims: ['exp', 'sub'],
    }));
  } catch (err) {
    if (err instanceof errors.JWTExpired)
      throw refuse('X-OpenWebUI-User-Jwt has expired', 'user JWT expired');
    const why = err instanceof errors.JOSEError ? err.code : 'ERR_UNKNOWN';
    throw refuse('Invalid X-OpenWebUI-User-Jwt', `invalid user JWT (${why})`);
  }
  const sub = typeof payload.sub === 'string' ? payload.sub.trim() : '';
  if (!sub) throw refuse('Invalid X-OpenWebUI-User-Jwt', 'invalid user JWT (empty sub)');
  const email = typeof payload.email === 'string' ? payload.email.trim().toLowerCase() : '';
  return { id: sub, email };
}

/** The user a trusted request names, or undefined when it names none. */
export async function forwardedUser(
  request: FastifyRequest,
  policy: UserAccessPolicy,
): Promise<ForwardedUser | undefined> {
  const h = policy.headers;
  const jwt = policy.jwtSecret ? header(request, h.userJwt) : undefined;
  const signed = jwt !== undefined ? await verifiedJwt(request, jwt, policy.jwtSecret!) : undefined;
  const id = signed ? undefined : header(request, h.userId);
  const email = signed ? undefined : header(request, h.userEmail);
  const groups = header(request, h.groups);
  const groupIds = header(request, h.groupIds);
  if (!signed && id === undefined && email === undefined && groups === undefined && groupIds === undefined) {
    return undefined;
  }
  const userId = signed ? signed.id : unquote(id ?? '').trim();
  const userEmail = signed
    ? signed.email
    : unquote(email ?? '')
        .trim()
        .toLowerCase();
  const collections = new Set(policy.default);
  for (const g of [...list(groups), ...list(groupIds)]) {
    for (const c of policy.groups.get(g) ?? []) collections.add(c);
  }
  for (const who of [userId, userEmail]) {
    if (who) for (const c of policy.users.get(who) ?? []) collections.add(c);
  }
  return { id: userId || userEmail || '(unnamed)', collections: [...collections] };
}

/**
 * `access` narrowed to the user the request names, when its key is trusted to name one; otherwise
 * `access` as it is. Called by every bearer check that admits keys scoped to collections.
 */
export async function withUser(
  request: FastifyRequest,
  access: Access,
  policy: UserAccessPolicy | undefined,
): Promise<Access> {
  if (!policy) return access;
  const keyName = access.kind === 'main' ? MAIN_KEY_NAME : access.name;
  if (!policy.trustedKeys.has(keyName)) return access;
  const user = await forwardedUser(request, policy);
  if (!user) {
    return policy.requireUser ? { ...access, user: { id: '(none)', collections: [] } } : access;
  }
  noteOnRequestLine(request, { user: user.id });
  return { ...access, user };
}
