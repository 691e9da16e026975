import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import type { McpSettings } from '../../src/config/tools.js';
import { toolsSchema } from '../../src/config/tools.js';
import type { KildeApp, ServicePart } from '../../src/http/app.js';
import { McpEndpoint, type ToolSource } from '../../src/mcp/endpoint.js';
import { createToolsPart, type ToolsDeps, type ToolsPart } from '../../src/tools/part.js';
import { FAKE_KEY } from '../fakes/weather.js';
import { type logSink, testApp, testConfig } from '../helpers/app.js';

export interface ToolsHarness {
  app: KildeApp;
  part: ToolsPart;
  /** The app's `/mcp`, serving the part's tools. */
  mcp: McpEndpoint;
  logs: ReturnType<typeof logSink>;
  /** `http://127.0.0.1:<port>` of the listening app. */
  base: string;
  mcpUrl: URL;
}

/** A tool server listening on a loopback port (the SDK client and the SSE tests need real sockets). */
export async function startTools(
  upstream: string,
  env: Record<string, string> = {},
  deps: ToolsDeps = {},
): Promise<ToolsHarness> {
  const config = testConfig(toolsSchema, {
    WEATHER_API_BASE_URL: upstream,
    WEATHER_API_KEY: FAKE_KEY,
    ...env,
  });
  const part = createToolsPart(config, deps);
  const parts = withMcp('kilde-tools', config, part);
  const { app, logs } = await testApp(config, parts);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, part, mcp: parts.at(-1) as McpEndpoint, logs, base, mcpUrl: new URL(`${base}/mcp`) };
}

/** The parts, then the one `/mcp` serving their tools, as `kilde serve` composes them. */
export function withMcp(
  name: string,
  settings: McpSettings,
  ...parts: (ServicePart & { mcpTools: ToolSource })[]
): ServicePart[] {
  return [...parts, new McpEndpoint({ name, settings, tools: parts.map((p) => p.mcpTools) })];
}

export const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

export function rpc(method: string, params: Record<string, unknown> = {}, id = 1) {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

export const INIT_PARAMS = {
  protocolVersion: '2024-11-05',
  capabilities: {},
  clientInfo: { name: 'raw-test', version: '1.0.0' },
};

/** Reads JSON-RPC messages out of an SSE or JSON body. */
export function messagesOf(contentType: string | null, body: string): Record<string, unknown>[] {
  if (contentType?.startsWith('application/json')) {
    const parsed = JSON.parse(body) as Record<string, unknown> | Record<string, unknown>[];
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  return body
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A raw HTTP request with full control of Host/Origin (fetch forbids setting Host). */
export async function raw(
  url: string,
  o: { method?: 'GET' | 'POST' | 'DELETE'; headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  const res = await request(url, {
    method: o.method ?? 'POST',
    headers: o.headers ?? {},
    ...(o.body === undefined ? {} : { body: o.body }),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}
