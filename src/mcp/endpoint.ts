import { readFileSync } from 'node:fs';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { McpSettings } from '../config/tools.js';
import type { Access } from '../http/access.js';
import type { KildeApp, PartContext, ServicePart } from '../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { BodyShapeError } from '../http/json-body-parser.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { bearerGuard } from './bearer-guard.js';
import { forbiddenToolMessage, RpcCode, sendJsonRpcError } from './json-rpc.js';
import { createMcpServer, type ToolMetrics, toolMetrics } from './server.js';
import { mayCall, type ToolDefinition } from './tool-definition.js';
import { originsFromHosts, transportSecurityHook } from './transport-security.js';

export const MCP_PATH = '/mcp';
/** Same bound the SDK applies when it reads bodies itself. */

/** The message every `/mcp` call fails with before `start()` (the reference server's wording, kept for clients that match on it). */
export const NOT_STARTED = 'Task group is not initialized';

type State = 'new' | 'running' | 'closed';

/**
 * The tools one service contributes to `/mcp`, made once the app exists (a tool may need the app's
 * metrics registry, as the knowledge search does).
 */
export type ToolSource = (ctx: PartContext) => readonly ToolDefinition[];

/**
 * Everything about the `/mcp` endpoint itself, set once by whoever composes the server (the CLI's
 * `serve tools` / `serve agent`, `serve all`'s composition): the name it answers under, the
 * transport security (`MCP_ALLOWED_HOSTS`, `MCP_ALLOWED_ORIGINS`), the bearer guard
 * (`MCP_BEARER_AUTH`) and the answer format (`MCP_JSON_RESPONSE`). CORS is the app's
 * (`CORS_ORIGINS`), as for every route.
 */
export interface McpEndpointOptions {
  /** `serverInfo.name` in the initialize answer: `kilde-agent`, `kilde-tools`, `kilde` for `serve all`. */
  name: string;
  settings: McpSettings;
  /** The services' tools, listed in this order. */
  tools: readonly ToolSource[];
}

/**
 * The one `/mcp` endpoint of an app, a service part of its own mounted after the parts whose tools
 * it serves: routes, transport security, the optional bearer guard, and a start/close lifecycle:
 * `/mcp` serves only between `start()` (once per instance) and `close()`, which also ends open
 * event streams so shutdown does not wait on them.
 *
 * Stateless: every POST gets a fresh SDK server and transport and no `Mcp-Session-Id`, so any
 * replica can answer any request behind a load balancer. GET (server-initiated stream) and DELETE
 * (session end) have nothing to do without sessions and answer 405, as the transport allows.
 */
export class McpEndpoint implements ServicePart {
  readonly name = 'mcp';
  private state: State = 'new';
  private readonly active = new Set<{ transport: StreamableHTTPServerTransport; server: Server }>();
  private tools: readonly ToolDefinition[] = [];
  private metrics: ToolMetrics | undefined;
  private log: Logger | undefined;

  constructor(private readonly o: McpEndpointOptions) {}

  start(): Promise<void> {
    if (this.state !== 'new')
      return Promise.reject(new Error('MCP session manager .start() can only be called once per instance'));
    this.state = 'running';
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.state = 'closed';
    const open = [...this.active];
    this.active.clear();
    await Promise.allSettled(open.flatMap(({ transport, server }) => [transport.close(), server.close()]));
  }

  /** Registers `/mcp` on the app with every source's tools. */
  register(app: KildeApp, ctx: PartContext): void {
    this.tools = this.o.tools.flatMap((source) => source(ctx));
    this.metrics = toolMetrics(ctx.metrics);
    this.log = ctx.log;
    const s = this.o.settings;
    const security = transportSecurityHook({
      allowedHosts: s.MCP_ALLOWED_HOSTS,
      allowedOrigins: s.MCP_ALLOWED_ORIGINS ?? originsFromHosts(s.MCP_ALLOWED_HOSTS),
    });
    // The guard comes first, like the outermost middleware of the reference deployment.
    const guard = s.MCP_BEARER_AUTH ? [bearerGuard(ctx.config.API_KEY, ctx.tenantKeys, ctx.userAccess)] : [];
    app.route({
      method: ['GET', 'POST', 'DELETE'],
      url: MCP_PATH,
      bodyLimit: BODY_LIMITS.mcp,
      config: { jsonShape: JSON_SHAPES.mcp },
      onRequest: [...guard, security],
      errorHandler: (error: FastifyError, request, reply) => {
        // Malformed or empty JSON bodies: a JSON-RPC parse error rather than the REST error shape.
        if (error.code?.startsWith('FST_ERR_CTP')) {
          request.log.info({ code: error.code }, 'mcp: unreadable body');
          if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
            return sendJsonRpcError(reply, 413, RpcCode.Transport, 'Request body too large');
          return sendJsonRpcError(reply, 400, RpcCode.ParseError, `Parse error: ${error.message}`);
        }
        // Over the route's JSON_SHAPES bound: refused while streaming, before any parse; same
        // status and code as a body over its bytes.
        if (error instanceof BodyShapeError) {
          return sendJsonRpcError(reply, 413, RpcCode.Transport, error.message);
        }
        throw error;
      },
      handler: (request, reply) => this.handle(request, reply),
    });
    // The guard covers every path that starts with /mcp (`/mcp/x`, `/mcp-x`), not only the
    // endpoint itself; the static `/mcp` route above still wins for `/mcp`.
    app.all(`${MCP_PATH}*`, { onRequest: guard }, async (request, reply) =>
      reply
        .status(404)
        .send({ detail: `Not found: ${request.method} ${request.url.split('?')[0]}`, code: 'NOT_FOUND' }),
    );
    // Shutdown drains in-flight tool calls like REST requests (Fastify already answers new ones 503),
    // up to SHUTDOWN_GRACE; whatever still runs then is ended, so close() never hangs on a stream.
    const graceMs = ctx.config.SHUTDOWN_GRACE * 1000;
    app.addHook('preClose', async () => {
      await this.drain(graceMs);
      await this.close();
    });
  }

  /** Resolves when no `/mcp` request is in flight, or after `ms`. */
  private async drain(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.active.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  }

  private async handle(request: FastifyRequest, reply: FastifyReply) {
    if (this.state !== 'running') {
      return sendJsonRpcError(
        reply,
        503,
        RpcCode.Transport,
        this.state === 'closed' ? 'MCP server is shutting down' : NOT_STARTED,
      );
    }
    if (request.method !== 'POST') {
      return sendJsonRpcError(
        reply.header('allow', 'POST'),
        405,
        RpcCode.Transport,
        'Method not allowed: this MCP server is stateless (no sessions, no server-initiated stream)',
      );
    }
    const tools = this.tools;
    const refused = forbiddenCall(request.body, tools, request.kildeAccess);
    if (refused) {
      // As the REST twin answers the same key (403 FORBIDDEN), and as MCP's authorization rules
      // answer a token without the rights a request needs: 403 with an insufficient_scope challenge.
      // The body stays JSON-RPC, with the call's id, so a client can match it to its request.
      noteOnRequestLine(request, { tool: refused.tool, code: 'FORBIDDEN' });
      return sendJsonRpcError(
        reply.header('www-authenticate', 'Bearer error="insufficient_scope"'),
        403,
        RpcCode.Forbidden,
        forbiddenToolMessage(refused.tool),
        refused.id,
      );
    }
    const server = createMcpServer({ name: this.o.name, version: packageVersion() }, tools, {
      log: this.log!.child({ reqId: request.id }),
      metrics: this.metrics!,
      access: request.kildeAccess,
    });
    // No sessionIdGenerator: stateless mode, no Mcp-Session-Id.
    const transport = new StreamableHTTPServerTransport({
      enableJsonResponse: this.o.settings.MCP_JSON_RESPONSE,
    });
    // The SDK reports what it refused (406 Accept, 400 batch...) here and answers the client itself.
    transport.onerror = (err) => request.log.info({ reason: err.message }, 'mcp: transport refused request');
    server.onerror = (err) => request.log.debug({ reason: err.message }, 'mcp: protocol error');
    const entry = { transport, server };
    this.active.add(entry);
    reply.raw.on('close', () => {
      // The client left or the answer is complete: abort in-flight tool calls, free the pair.
      this.active.delete(entry);
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    reply.hijack();
    // The SDK writes the answer on the raw response: headers set on the reply so far (CORS's, by
    // its onRequest hook) would be lost with it.
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, typeof value === 'number' ? String(value) : value);
    }
    reply.raw.setHeader('x-request-id', request.id);
    if (wantsClose(request.raw)) closeAfterAnswer(reply.raw);
    try {
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (err) {
      request.log.error({ err }, 'mcp: transport failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: RpcCode.InternalError, message: 'Internal error' },
            id: null,
          }),
        );
      }
    }
  }
}

/**
 * The tool a `tools/call` names when the caller may not use it (`mayCall`), with the call's id. Only
 * a single message is looked at; anything else goes on to the SDK, whose handler refuses the same
 * calls as a JSON-RPC error (server.ts).
 */
export function forbiddenCall(
  body: unknown,
  tools: readonly ToolDefinition[],
  access: Access | undefined,
): { tool: string; id: string | number | null } | undefined {
  if (access === undefined || access.kind === 'main') return undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { method, params, id } = body as { method?: unknown; params?: unknown; id?: unknown };
  if (method !== 'tools/call' || typeof params !== 'object' || params === null) return undefined;
  const name = (params as { name?: unknown }).name;
  const tool = tools.find((t) => t.name === name);
  if (!tool || mayCall(tool, access)) return undefined;
  return { tool: tool.name, id: typeof id === 'string' || typeof id === 'number' ? id : null };
}

/** `Connection: close`, or HTTP/1.0 without `Connection: keep-alive`. */
export function wantsClose(req: IncomingMessage): boolean {
  const connection = String(req.headers.connection ?? '').toLowerCase();
  if (/(^|,)\s*close\s*(,|$)/.test(connection)) return true;
  return req.httpVersion === '1.0' && !/(^|,)\s*keep-alive\s*(,|$)/.test(connection);
}

/**
 * The SDK answers with an explicit `Connection: keep-alive`, which makes Node keep the socket open
 * even when the client asked to close it (until the keep-alive time-out, ~73 s). Its header is
 * replaced by `Connection: close`, so Node closes the socket once the answer is sent.
 */
function closeAfterAnswer(res: ServerResponse): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  const patched = (status: number, ...rest: unknown[]): ServerResponse => {
    const last = rest.at(-1);
    if (last !== null && typeof last === 'object' && !Array.isArray(last)) {
      const headers = Object.fromEntries(
        Object.entries(last as OutgoingHttpHeaders).filter(([k]) => k.toLowerCase() !== 'connection'),
      );
      return writeHead(status, ...rest.slice(0, -1), { ...headers, connection: 'close' });
    }
    res.setHeader('connection', 'close');
    return writeHead(status, ...rest);
  };
  res.writeHead = patched as typeof res.writeHead;
}

let version: string | undefined;
/** `serverInfo.version`: Kilde's package version (src/ and dist/ both sit two levels below it). */
function packageVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  return version;
}
