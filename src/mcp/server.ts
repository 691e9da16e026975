import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Access } from '../http/access.js';
import { forbiddenToolMessage, RpcCode, ToolError } from './json-rpc.js';
import { listEntry, mayCall, parseArguments, type ToolDefinition } from './tool-definition.js';

export interface McpServerInfo {
  name: string;
  version: string;
}

export interface ToolMetrics {
  calls: Counter<'tool' | 'outcome'>;
  duration: Histogram<'tool'>;
}

/** Tool-call metrics on the app's registry; shared when several parts mount tools on one app. */
export function toolMetrics(registry: Registry): ToolMetrics {
  const calls =
    (registry.getSingleMetric('kilde_mcp_tool_calls_total') as Counter<'tool' | 'outcome'> | undefined) ??
    new Counter({
      name: 'kilde_mcp_tool_calls_total',
      help: 'MCP tool calls by tool and outcome (ok or the JSON-RPC error code)',
      labelNames: ['tool', 'outcome'] as const,
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric('kilde_mcp_tool_duration_seconds') as Histogram<'tool'> | undefined) ??
    new Histogram({
      name: 'kilde_mcp_tool_duration_seconds',
      help: 'MCP tool call latency by tool',
      labelNames: ['tool'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
  return { calls, duration };
}

/**
 * One MCP server for one HTTP request (stateless mode: the SDK's transport cannot be reused across
 * requests, and a server is bound to one transport). The low-level `Server` is used instead of
 * `McpServer` because `McpServer` turns every exception of a tool into an `isError` result, while
 * a tool failure must reach the client as a JSON-RPC error with `code` and a short, human-friendly
 * `message` (it is shown to the user).
 */
export function createMcpServer(
  info: McpServerInfo,
  tools: readonly ToolDefinition[],
  deps: { log: Logger; metrics: ToolMetrics; access?: Access | undefined },
): Server {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const server = new Server(info, { capabilities: { tools: { listChanged: false } } });

  // A caller is offered only the tools it may call: a per-tenant key does not see the main key's.
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.filter((t) => mayCall(t, deps.access)).map(listEntry),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: rawArgs } = request.params;
    const started = performance.now();
    const log = deps.log.child({ tool: name, rpcId: extra.requestId });
    let outcome = 'ok';
    try {
      const tool = byName.get(name);
      if (!tool) throw new ToolError(RpcCode.InvalidParams, `Unknown tool: ${name}`);
      // The endpoint answers such a call 403 before it gets here (endpoint.ts); this holds for
      // any other way a call arrives.
      if (!mayCall(tool, deps.access)) throw new ToolError(RpcCode.Forbidden, forbiddenToolMessage(name));
      const args = parseArguments(tool, rawArgs);
      const token = request.params._meta?.progressToken;
      const text = await tool.run(args, {
        signal: extra.signal,
        log,
        access: deps.access,
        progress: async (message, progress, total) => {
          if (token === undefined) return;
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress, message, ...(total === undefined ? {} : { total }) },
          });
        },
      });
      return { content: [{ type: 'text', text }] };
    } catch (err) {
      const error =
        err instanceof ToolError
          ? err
          : new ToolError(RpcCode.InternalError, 'Internal error', { cause: err });
      outcome = String(error.code);
      if (error.code === RpcCode.InternalError) log.error({ err }, 'mcp: tool failed unexpectedly');
      else log.info({ code: error.code, reason: error.message }, 'mcp: tool call failed');
      // The SDK answers a thrown error as a JSON-RPC error with its numeric `code` and `message`.
      throw error;
    } finally {
      const seconds = (performance.now() - started) / 1000;
      deps.metrics.calls.inc({ tool: byName.has(name) ? name : '(unknown)', outcome });
      deps.metrics.duration.observe({ tool: byName.has(name) ? name : '(unknown)' }, seconds);
      log.debug({ ms: Math.round(seconds * 1000), outcome }, 'mcp: tool call');
    }
  });
  return server;
}
