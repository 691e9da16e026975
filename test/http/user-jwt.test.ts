import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/parse.js';
import type { KildeApp } from '../../src/http/app.js';
import { loadUserAccess } from '../../src/http/user-access.js';
import { logSink } from '../helpers/app.js';
import { putMarkdown, type ServeAll, startServeAll } from '../helpers/serve-all.js';
import { MCP_HEADERS, messagesOf, rpc } from '../tools/harness.js';

/**
 * Open WebUI's signed user header: with FORWARD_USER_INFO_HEADER_JWT_SECRET set, Open WebUI 0.12
 * sends `X-OpenWebUI-User-Jwt` instead of the `X-OpenWebUI-User-*` headers, minted by
 * `_mint_forward_user_jwt` (backend/open_webui/utils/headers.py): PyJWT HS256 over
 * `{sub, email, name, role, iss: 'open-webui', iat, exp}`. The tokens here are made the same way.
 * Groups still travel in the `{{USER_GROUPS}}` header template.
 */
const MAIN = 'main-key-0123456789';
const OWUI = 'open-webui-key-0123456789';
const OTHER = 'other-key-0123456789';
const SECRET = 'open-webui-forward-user-secret-0123456789';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function owuiJwt(
  user: { id: string; email: string; name: string },
  opts: { secret?: string; expiresIn?: number; issuer?: string } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email: user.email, name: user.name, role: 'user' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.id)
    .setIssuer(opts.issuer ?? 'open-webui')
    .setIssuedAt(now)
    .setExpirationTime(now + (opts.expiresIn ?? 300))
    .sign(new TextEncoder().encode(opts.secret ?? SECRET));
}

const ALICE = { id: '3b1f0c2e-alice', email: 'alice@example.com', name: 'Alice' };
const BOB = { id: '9d8e7f6a-bob', email: 'bob@example.com', name: 'Bob' };

let server: ServeAll;
let app: KildeApp;
let url: string;
const logs = logSink();

const put = (fileId: string, collection: string, content: string) =>
  putMarkdown(app, MAIN, fileId, collection, content);

beforeAll(async () => {
  server = await startServeAll(
    {
      API_KEY: MAIN,
      API_KEYS: JSON.stringify({
        [OWUI]: { collections: ['eng-docs', 'sales-docs', 'bob-notes'], name: 'open-webui' },
        [OTHER]: { collections: ['eng-docs', 'sales-docs'], name: 'other' },
      }),
      USER_ACCESS: [
        'trusted_keys: [open-webui]',
        'groups:',
        '  Engineering: [eng-docs]',
        '  Sales: [sales-docs]',
        'users:',
        '  bob@example.com: [bob-notes]',
      ].join('\n'),
      USER_ACCESS_JWT_SECRET: SECRET,
      EMBEDDING_PROVIDER: 'none',
      MCP_SEARCH_COLLECTIONS: 'eng-docs, sales-docs, bob-notes',
      MCP_BEARER_AUTH: 'true',
      MCP_JSON_RESPONSE: 'true',
    },
    { prefix: 'kilde-user-jwt-', logs, listen: true },
  );
  ({ app, url } = server);
  await put('eng-1', 'eng-docs', '# Engineering\n\nThe quarterly budget plan for the platform team.');
  await put('sales-1', 'sales-docs', '# Sales\n\nThe quarterly budget plan for the sales team.');
  await put('bob-1', 'bob-notes', "# Bob's notes\n\nMy own budget plan draft.");
});

afterAll(async () => {
  await server?.close();
});

type Meta = { collection_name: string };

async function search(key: string, headers: Record<string, string>, collections: string[]) {
  return app.inject({
    method: 'POST',
    url: '/search',
    headers: { ...bearer(key), ...headers },
    payload: { queries: ['budget plan'], collection_names: collections, k: 20 },
  });
}
const hitCollections = (res: { json(): { metadatas: Meta[][] } }) =>
  new Set(res.json().metadatas[0]!.map((m) => m.collection_name));

describe("per-user access through Open WebUI's signed X-OpenWebUI-User-Jwt (USER_ACCESS_JWT_SECRET)", () => {
  it('the verified JWT names the user: its sub and email map to collections, with the group templates', async () => {
    const alice = await search(
      OWUI,
      { 'x-openwebui-user-jwt': await owuiJwt(ALICE), 'x-openwebui-user-groups': 'Engineering' },
      ['eng-docs'],
    );
    expect(alice.statusCode, alice.body).toBe(200);
    expect(hitCollections(alice)).toEqual(new Set(['eng-docs']));
    // Bob's e-mail in the JWT gives him his own entry.
    const bob = await search(
      OWUI,
      { 'x-openwebui-user-jwt': await owuiJwt(BOB), 'x-openwebui-user-groups': 'Sales' },
      ['sales-docs', 'bob-notes'],
    );
    expect(bob.statusCode, bob.body).toBe(200);
    expect(hitCollections(bob)).toEqual(new Set(['sales-docs', 'bob-notes']));
    expect(logs.lines.some((l) => l.user === ALICE.id)).toBe(true);
  });

  it('with a JWT, the plain id and e-mail headers are ignored: they cannot claim another user', async () => {
    const spoofed = await search(
      OWUI,
      {
        'x-openwebui-user-jwt': await owuiJwt(ALICE),
        'x-openwebui-user-email': BOB.email,
        'x-openwebui-user-id': BOB.id,
      },
      ['bob-notes'],
    );
    expect(spoofed.statusCode).toBe(403);
    expect(spoofed.json()).toEqual({ detail: 'This user may not read "bob-notes"', code: 'FORBIDDEN' });
  });

  it('a JWT that does not verify is refused 401 (another secret, expired, another issuer, none algorithm)', async () => {
    const cases: [string, string][] = [
      [await owuiJwt(ALICE, { secret: 'some-other-secret-0123456789' }), 'Invalid X-OpenWebUI-User-Jwt'],
      [await owuiJwt(ALICE, { expiresIn: -60 }), 'X-OpenWebUI-User-Jwt has expired'],
      [await owuiJwt(ALICE, { issuer: 'someone-else' }), 'Invalid X-OpenWebUI-User-Jwt'],
      [
        `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(
          JSON.stringify({ sub: BOB.id, email: BOB.email, iss: 'open-webui', exp: 4102444800 }),
        ).toString('base64url')}.`,
        'Invalid X-OpenWebUI-User-Jwt',
      ],
      ['not-a-jwt', 'Invalid X-OpenWebUI-User-Jwt'],
    ];
    for (const [token, detail] of cases) {
      const res = await search(OWUI, { 'x-openwebui-user-jwt': token }, ['eng-docs']);
      expect(res.statusCode, token).toBe(401);
      expect(res.json()).toEqual({ detail, code: 'UNAUTHORIZED' });
    }
    // /mcp refuses it too, before any MCP message is handled.
    const mcp = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, ...bearer(OWUI), 'x-openwebui-user-jwt': 'not-a-jwt' },
      body: rpc('tools/call', { name: 'search_knowledge', arguments: { query: 'budget plan' } }),
    });
    expect(mcp.status).toBe(401);
  });

  it("/mcp search_knowledge: the JWT's user and group, nothing else", async () => {
    const res = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        ...MCP_HEADERS,
        ...bearer(OWUI),
        'x-openwebui-user-jwt': await owuiJwt(ALICE),
        'x-openwebui-user-groups': 'Engineering',
      },
      body: rpc('tools/call', { name: 'search_knowledge', arguments: { query: 'budget plan', k: 20 } }),
    });
    expect(res.status).toBe(200);
    const [message] = messagesOf(res.headers.get('content-type'), await res.text());
    const text = (message!.result as { content: { text: string }[] }).content[0]!.text;
    const collections = (JSON.parse(text) as { results: { collection: string }[] }).results.map(
      (r) => r.collection,
    );
    expect(collections.length).toBeGreaterThan(0);
    expect(new Set(collections)).toEqual(new Set(['eng-docs']));
  });

  it("a key that is not trusted: the JWT is not read, the key's access applies", async () => {
    const res = await search(OTHER, { 'x-openwebui-user-jwt': 'not-a-jwt' }, ['eng-docs', 'sales-docs']);
    expect(res.statusCode).toBe(200);
    expect(hitCollections(res)).toEqual(new Set(['eng-docs', 'sales-docs']));
  });

  it('USER_ACCESS_JWT_SECRET without a policy is a configuration error', () => {
    expect(() => loadUserAccess({ USER_ACCESS_JWT_SECRET: SECRET }, [])).toThrow(ConfigError);
  });
});
