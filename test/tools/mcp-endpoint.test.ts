import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { toolsSchema } from '../../src/config/tools.js';
import { buildApp } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { NOT_STARTED } from '../../src/mcp/endpoint.js';
import { createToolsPart } from '../../src/tools/part.js';
import { FAKE_KEY, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { AUTH, logSink, testConfig } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import {
  INIT_PARAMS,
  MCP_HEADERS,
  messagesOf,
  raw,
  rpc,
  startTools,
  type ToolsHarness,
  withMcp,
} from './harness.js';

let up: FakeWeather;
const open: ToolsHarness[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  up = await startFakeWeather();
});
afterAll(() => up.close());
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(open.splice(0).map((h) => h.app.close()));
  up.mode = { kind: 'ok' };
  up.requests.length = 0;
});

async function tools(env: Record<string, string> = {}, deps: Parameters<typeof startTools>[2] = {}) {
  const h = await startTools(up.url, env, deps);
  open.push(h);
  return h;
}

async function connect(h: ToolsHarness) {
  const client = new Client({ name: 'kilde-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(h.mcpUrl));
  clients.push(client);
  return client;
}

async function rpcError(p: Promise<unknown>): Promise<McpError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  return err as McpError;
}

describe('MCP over Streamable HTTP with the SDK client', () => {
  it('initializes, lists get_weather with its schema, and calls it', async () => {
    const client = await connect(await tools());
    expect(client.getServerVersion()?.name).toBe('kilde-tools');
    expect(client.getServerCapabilities()?.tools).toBeDefined();

    const { tools: listed } = await client.listTools();
    expect(listed.map((t) => t.name)).toEqual(['get_weather']);
    const tool = listed[0]!;
    const [summary, ...rest] = tool.description!.split('\n');
    expect(summary).toBe(
      'Get the current weather (temperature in °C, conditions, observation time) for a city.',
    );
    expect(rest.join(' ')).toMatch(/^Call it when/);
    expect(tool.inputSchema).toEqual({
      type: 'object',
      properties: {
        city: expect.objectContaining({ type: 'string', minLength: 1, maxLength: 100 }),
        units: expect.objectContaining({ type: 'string', enum: ['metric', 'imperial'], default: 'metric' }),
      },
      required: ['city'],
    });

    const result = await client.callTool({ name: 'get_weather', arguments: { city: ' Aarhus ' } });
    expect(result.isError).toBeUndefined();
    const content = result.content as { type: string; text: string }[];
    expect(content).toHaveLength(1);
    expect(content[0]!.type).toBe('text');
    expect(JSON.parse(content[0]!.text)).toEqual({
      city: 'Aarhus',
      temperature_c: 12.5,
      conditions: 'clear over Aarhus',
      observed_at: '2026-11-22T06:00:00Z',
    });
    const sent = up.requests.at(-1)!;
    expect(sent.url.searchParams.get('city')).toBe('Aarhus'); // trimmed by the tool's own bounds
    expect(sent.url.searchParams.get('units')).toBe('metric');
    expect(sent.headers.authorization).toBe(`Bearer ${FAKE_KEY}`);
  });

  it.each([
    [{ kind: 'status', status: 404 } as const, -32010, 'City not found: Nowhere'],
    [{ kind: 'status', status: 422 } as const, -32011, 'Invalid request to weather API'],
    [{ kind: 'status', status: 500 } as const, -32012, 'Upstream weather service unavailable'],
    [{ kind: 'malformed' } as const, -32012, 'Upstream weather service unavailable'],
    [{ kind: 'slow', delayMs: 1500 } as const, -32013, 'Weather service timed out'],
  ])('turns upstream %o into JSON-RPC error %i "%s"', async (mode, code, message) => {
    const client = await connect(await tools({}, { totalTimeoutMs: 200 }));
    up.mode = mode;
    const err = await rpcError(client.callTool({ name: 'get_weather', arguments: { city: 'Nowhere' } }));
    expect(err.code).toBe(code);
    expect(err.message).toBe(`MCP error ${code}: ${message}`);
  });

  it('re-applies the REST bounds to MCP arguments (invalid params, no upstream call)', async () => {
    const client = await connect(await tools());
    for (const args of [{ city: 'x'.repeat(101) }, { city: '  ' }, { city: 'Oslo', units: 'kelvin' }, {}]) {
      const err = await rpcError(client.callTool({ name: 'get_weather', arguments: args }));
      expect(err.code).toBe(-32602);
      expect(err.message).toMatch(/Invalid arguments for get_weather: .*(city|units)/);
    }
    expect(up.requests).toHaveLength(0);
    const unknown = await rpcError(client.callTool({ name: 'get_forecast', arguments: {} }));
    expect(unknown.code).toBe(-32602);
    expect(unknown.message).toMatch(/Unknown tool: get_forecast/);
  });

  it('serves MCP and REST from one cached service function', async () => {
    const clock = { now: 0 };
    const h = await tools({}, { now: () => clock.now });
    const client = await connect(h);
    await client.callTool({ name: 'get_weather', arguments: { city: 'Tromsø', units: 'imperial' } });
    const rest = await h.app.inject({ url: '/weather?city=tromsø&units=imperial', headers: AUTH });
    expect(rest.statusCode).toBe(200);
    expect(rest.json()).toEqual({
      city: 'Tromsø',
      temperature_c: 21.5,
      conditions: 'clear over Tromsø',
      observed_at: '2026-11-22T06:00:00Z',
    });
    expect(up.requests).toHaveLength(1); // the REST call was a cache hit of the MCP call
    clock.now += 600_000;
    await client.callTool({ name: 'get_weather', arguments: { city: 'Tromsø', units: 'imperial' } });
    expect(up.requests).toHaveLength(2);
  });

  it('counts tool calls on the metrics registry', async () => {
    const h = await tools();
    const client = await connect(h);
    await client.callTool({ name: 'get_weather', arguments: { city: 'Oslo' } });
    await client.callTool({ name: 'get_weather', arguments: { city: 'Atlantis' } }).catch(() => undefined);
    const metrics = await h.app.inject({ url: '/metrics', headers: AUTH });
    expect(metrics.body).toMatch(/kilde_mcp_tool_calls_total\{tool="get_weather",outcome="ok"\} 1/);
    expect(metrics.body).toMatch(/kilde_mcp_tool_calls_total\{tool="get_weather",outcome="-32010"\} 1/);
  });
});

describe('raw JSON-RPC on /mcp', () => {
  it('accepts initialize with protocolVersion 2024-11-05, statelessly (no session id)', async () => {
    const h = await tools();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: rpc('initialize', INIT_PARAMS),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const [msg] = messagesOf(res.headers.get('content-type'), await res.text());
    expect(msg).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: {
        protocolVersion: '2024-11-05',
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'kilde-tools' },
      },
    });
  });

  it('answers with one JSON body when MCP_JSON_RESPONSE=true', async () => {
    const h = await tools({ MCP_JSON_RESPONSE: 'true' });
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: rpc('tools/call', { name: 'get_weather', arguments: { city: 'Oslo' } }, 7),
    });
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { id: number; result: { content: { text: string }[] } };
    expect(body.id).toBe(7);
    expect(JSON.parse(body.result.content[0]!.text).city).toBe('Oslo');
    // The SDK client copes with JSON answers too.
    const client = await connect(h);
    expect((await client.listTools()).tools).toHaveLength(1);
  });

  it('answers 405 to GET and DELETE: no sessions, no server-initiated stream', async () => {
    const h = await tools();
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await raw(h.mcpUrl.href, { method, headers: { accept: 'text/event-stream' } });
      expect(res.status, method).toBe(405);
      expect(res.headers.allow).toBe('POST');
    }
  });

  it('answers a JSON-RPC parse error for a malformed body', async () => {
    const h = await tools();
    const res = await raw(h.mcpUrl.href, { headers: MCP_HEADERS, body: '{"jsonrpc": "2.0", ' });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).error.code).toBe(-32700);
    const notRpc = await raw(h.mcpUrl.href, { headers: MCP_HEADERS, body: '{"hello": 1}' });
    expect(notRpc.status).toBe(400);
    expect(JSON.parse(notRpc.text).error.code).toBe(-32700);
    const huge = await raw(h.mcpUrl.href, {
      headers: MCP_HEADERS,
      body: rpc('tools/call', { name: 'get_weather', arguments: { city: 'x'.repeat(5 * 1024 * 1024) } }),
    });
    expect(huge.status).toBe(413);
    expect(up.requests).toHaveLength(0);
  });

  it('answers 406 when Accept does not list both media types, and logs why', async () => {
    const h = await tools();
    const res = await raw(h.mcpUrl.href, {
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: rpc('ping'),
    });
    expect(res.status).toBe(406);
    expect(h.logs.text()).toMatch(/Not Acceptable.*mcp: transport refused request/);
  });

  it('answers unknown methods with -32601', async () => {
    const h = await tools({ MCP_JSON_RESPONSE: 'true' });
    const res = await fetch(h.mcpUrl, { method: 'POST', headers: MCP_HEADERS, body: rpc('prompts/list') });
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32601);
  });
});

describe('lifecycle', () => {
  function unstartedApp() {
    const config = testConfig(toolsSchema, { WEATHER_API_BASE_URL: up.url, WEATHER_API_KEY: FAKE_KEY });
    const parts = withMcp('kilde-tools', config, createToolsPart(config));
    const logger = createLogger(config, logSink().stream);
    return { mcp: parts.at(-1)!, app: buildApp(config, { logger, parts }) };
  }

  it('fails every /mcp call with a clear 503 until the machinery is started', async () => {
    const { mcp, app: building } = unstartedApp();
    const app = await building;
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/mcp',
        headers: MCP_HEADERS,
        payload: rpc('ping'),
      });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: NOT_STARTED }, id: null });
      await mcp.start!();
      const ok = await app.inject({
        method: 'POST',
        url: '/mcp',
        headers: MCP_HEADERS,
        payload: rpc('ping'),
      });
      expect(ok.statusCode).toBe(200);
      await expect(mcp.start!()).rejects.toThrow(/can only be called once per instance/);
    } finally {
      await app.close();
    }
  });

  it('runs two apps in one process independently', async () => {
    const a = await tools();
    const b = await tools({ MCP_JSON_RESPONSE: 'true' });
    const [ca, cb] = await Promise.all([connect(a), connect(b)]);
    await a.app.close();
    open.splice(open.indexOf(a), 1);
    const result = await cb.callTool({ name: 'get_weather', arguments: { city: 'Oslo' } });
    expect(JSON.parse((result.content as { text: string }[])[0]!.text).city).toBe('Oslo');
    await expect(ca.listTools()).rejects.toThrow();
  });

  it('aborts the tool call (and its upstream request) when the client goes away', async () => {
    const h = await tools();
    up.mode = { kind: 'gated' };
    const arrived = up.nextRequest();
    const ac = new AbortController();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: rpc('tools/call', { name: 'get_weather', arguments: { city: 'Oslo' } }),
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    await arrived;
    ac.abort();
    await expect
      .poll(() => h.logs.text(), { timeout: 5_000 })
      .toMatch(/"code":-32013.*mcp: tool call failed/);
    expect(h.logs.lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    up.release();
  });

  it('drains an in-flight tool call on shutdown, like a REST request, and refuses new ones', async () => {
    const h = await tools();
    up.mode = { kind: 'gated' };
    const arrived = up.nextRequest();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: rpc('tools/call', { name: 'get_weather', arguments: { city: 'Oslo' } }),
    });
    await arrived;
    const body = res.text();
    const closed = h.app.close();
    open.splice(open.indexOf(h), 1);
    // Shutting down: a new call is refused while the first one is still running (held upstream
    // until released below, so however slowly the shutdown begins, it begins before that).
    const late = await eventually(async () => {
      const r = await raw(h.mcpUrl.href, { headers: MCP_HEADERS, body: rpc('ping') });
      return r.status !== 200 && r;
    });
    expect(late.status).toBe(503);
    up.release();
    const [text] = await Promise.all([body, closed]);
    const [answer] = messagesOf('text/event-stream', text) as { result?: { content: { text: string }[] } }[];
    expect(JSON.parse(answer!.result!.content[0]!.text).city).toBe('Oslo');
  });

  it('with SHUTDOWN_GRACE=0 ends open event streams on shutdown instead of waiting for them', async () => {
    const h = await tools({ SHUTDOWN_GRACE: '0' });
    up.mode = { kind: 'gated' };
    const arrived = up.nextRequest();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: rpc('tools/call', { name: 'get_weather', arguments: { city: 'Oslo' } }),
    });
    await arrived;
    const body = res.text();
    await h.app.close();
    open.splice(open.indexOf(h), 1);
    expect(await body).not.toContain('"result"');
    up.release();
  });
});
