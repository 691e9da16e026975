import type { KildeApp } from './app.js';

/**
 * What a browser page on another origin may send: the bearer key, JSON, and the headers of MCP's
 * Streamable HTTP transport (session, protocol version, the event stream's resumption point).
 */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'accept',
  'x-request-id',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
];

/**
 * What such a page may read of an answer: MCP's session and protocol headers (a browser MCP client
 * reads them to go on with the session), the request id, which pipeline answered a search, and the
 * bearer challenge.
 */
const EXPOSED_HEADERS = [
  'mcp-session-id',
  'mcp-protocol-version',
  'x-request-id',
  'x-kilde-pipeline',
  'www-authenticate',
];

/**
 * CORS for `CORS_ORIGINS` (docs/api.md, "CORS"), with `@fastify/cors`. Its hook runs before every
 * route's own hooks, so a preflight is answered (204) before any bearer check: a preflight carries
 * no credentials by design. The key still guards every actual request; no cookies are involved, so
 * credentials are not allowed. Loaded only when configured.
 */
export async function registerCors(app: KildeApp, origins: readonly string[]): Promise<void> {
  const { default: cors } = await import('@fastify/cors');
  await app.register(cors, {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    // A bare OPTIONS (no Origin, no Access-Control-Request-Method) is not a preflight: 400 would
    // confuse probes; it gets the route's own answer instead.
    strictPreflight: false,
  });
}
