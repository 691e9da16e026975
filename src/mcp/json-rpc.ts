import type { FastifyReply } from 'fastify';

/**
 * JSON-RPC error codes Kilde's MCP endpoint answers with (the reference tool server's contract leaves
 * the numbers open).
 * -32700..-32600 are JSON-RPC's own; -32099..-32000 are reserved for servers. Kilde avoids the
 * values the MCP SDK already uses (-32000 transport, -32001 session, -32002 resource, -32042 URL
 * elicitation) for its tool failures, so a client can tell a tool failure from a transport one.
 */
export const RpcCode = {
  /** Body is not JSON / not JSON-RPC. */
  ParseError: -32700,
  /** Unknown method. */
  MethodNotFound: -32601,
  /** Unknown tool, or arguments outside the tool's bounds. */
  InvalidParams: -32602,
  /** An unexpected failure inside a tool (details only in the server log). */
  InternalError: -32603,
  /** Transport-level refusal (Host, Origin, Content-Type, machinery not running). */
  Transport: -32000,
  /** The upstream has no such entity (weather: HTTP 404 → `City not found: <city>`). */
  UpstreamNotFound: -32010,
  /** The upstream rejected the request (other 4xx). */
  UpstreamRejected: -32011,
  /** The upstream failed (5xx, unusable answer). */
  UpstreamUnavailable: -32012,
  /** No answer in time, or no connection. */
  UpstreamTimeout: -32013,
  /**
   * The caller's key may not use this tool (a per-tenant key calling a main-key tool), answered
   * with HTTP 403 like its REST twin (endpoint.ts, `forbiddenCall`).
   */
  Forbidden: -32020,
} as const;

/**
 * The one exception tool functions raise. It is deliberately not an HTTP error: the MCP server turns
 * it into a JSON-RPC error `{code, message}`, and the message is shown to the user, so keep it short.
 */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** A JSON-RPC error answered before the SDK sees the request (`id` null when it is not known). */
export function sendJsonRpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  id: string | number | null = null,
) {
  return reply
    .status(status)
    .header('content-type', 'application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id });
}

/** What a per-tenant key is told when it calls a tool only the main key may use. */
export function forbiddenToolMessage(tool: string): string {
  return `This API key may not call ${tool}: it may only use the tools that search its collections`;
}
