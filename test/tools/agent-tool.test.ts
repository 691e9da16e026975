import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentPart } from '../../src/agent/part.js';
import { agentSchema } from '../../src/config/agent.js';
import { toolsSchema } from '../../src/config/tools.js';
import type { KildeApp, ServicePart } from '../../src/http/app.js';
import { createToolsPart } from '../../src/tools/part.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { FAKE_KEY, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { AUTH, testApp, testConfig } from '../helpers/app.js';
import { MCP_HEADERS, raw, rpc, withMcp } from './harness.js';

let llm: FakeChatServer;
let up: FakeWeather;
let app: KildeApp | undefined;
let client: Client | undefined;

beforeAll(async () => {
  [llm, up] = await Promise.all([startFakeChatServer(), startFakeWeather()]);
});
afterAll(async () => {
  await Promise.all([llm.close(), up.close()]);
});
afterEach(async () => {
  await client?.close();
  await app?.close();
  client = undefined;
  app = undefined;
  llm.requests.length = 0;
  llm.mode = { kind: 'ok' };
});

async function listen(parts: ServicePart[], config: Parameters<typeof testApp>[0]) {
  ({ app } = await testApp(config, parts));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
  client = new Client({ name: 'agent-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return { client, url };
}

async function agent(env: Record<string, string> = {}) {
  const config = testConfig(agentSchema, {
    AGENT_API_BASE_URL: llm.baseUrl,
    AGENT_MODEL: 'tiny-model',
    ...env,
  });
  return listen(withMcp('kilde-agent', config, createAgentPart(config)), config);
}

describe('the echo agent as the MCP tool rewrite_concisely', () => {
  it('calls the same service function as POST /echo, with a compact result', async () => {
    const { client } = await agent();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['rewrite_concisely']);
    expect(tools[0]!.description!.split('\n')[0]).toBe(
      'Rewrite a text more concisely, keeping its meaning and language.',
    );
    expect(tools[0]!.inputSchema.required).toEqual(['text']);

    const result = await client.callTool({
      name: 'rewrite_concisely',
      arguments: { text: 'Hello there, friend' },
    });
    const content = result.content as { type: string; text: string }[];
    expect(JSON.parse(content[0]!.text)).toEqual({ rewritten: 'short: Hello there, friend' });
    const viaMcp = llm.requests.at(-1)!.json;

    const rest = await app!.inject({
      method: 'POST',
      url: '/echo',
      headers: AUTH,
      payload: { text: 'Hello there, friend' },
    });
    expect(rest.json()).toEqual({ original: 'Hello there, friend', rewritten: 'short: Hello there, friend' });
    // Byte-for-byte the same LLM call: one service function behind both.
    expect(llm.requests.at(-1)!.json).toEqual(viaMcp);
  });

  it('re-applies the 1..10000 character bound and maps LLM failures to JSON-RPC errors', async () => {
    const { client } = await agent();
    for (const text of ['', 'x'.repeat(10_001)]) {
      const err = await client.callTool({ name: 'rewrite_concisely', arguments: { text } }).catch((e) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(-32602);
    }
    expect(llm.requests).toHaveLength(0);
    llm.mode = { kind: 'status', status: 500 };
    const err = await client
      .callTool({ name: 'rewrite_concisely', arguments: { text: 'hi' } })
      .catch((e) => e);
    expect((err as McpError).code).toBe(-32012);
    expect((err as McpError).message).toBe('MCP error -32012: The language model is unavailable');
  });

  it('lists a strict schema and refuses unknown arguments with AGENT_STRICT_TOOLS=true (default)', async () => {
    const { client } = await agent();
    const [tool] = (await client.listTools()).tools;
    expect(tool!.inputSchema.additionalProperties).toBe(false);
    const err = await client
      .callTool({ name: 'rewrite_concisely', arguments: { text: 'hi', tone: 'formal' } })
      .catch((e) => e);
    expect((err as McpError).code).toBe(-32602);
    expect((err as McpError).message).toMatch(/Unrecognized key.*tone/);
    expect(llm.requests).toHaveLength(0);
  });

  it('lists an open schema and ignores unknown arguments with AGENT_STRICT_TOOLS=false', async () => {
    const { client } = await agent({ AGENT_STRICT_TOOLS: 'false' });
    const [tool] = (await client.listTools()).tools;
    expect(tool!.inputSchema).not.toHaveProperty('additionalProperties');
    const result = await client.callTool({
      name: 'rewrite_concisely',
      arguments: { text: 'hi', tone: 'formal' },
    });
    expect((result.content as { text: string }[])[0]!.text).toBe('{"rewritten":"short: hi"}');
  });

  it('guards Host with the agent defaults (agent:*, localhost:*)', async () => {
    const { url } = await agent();
    const init = rpc('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'x', version: '1' },
    });
    expect(
      (await raw(url.href, { headers: { ...MCP_HEADERS, host: 'agent:8000' }, body: init })).status,
    ).toBe(200);
    expect(
      (await raw(url.href, { headers: { ...MCP_HEADERS, host: 'tools:8000' }, body: init })).status,
    ).toBe(421);
  });
});

describe('several parts on one app (kilde serve all)', () => {
  it('serves every part’s tools from one /mcp', async () => {
    const env = { AGENT_API_BASE_URL: llm.baseUrl, WEATHER_API_BASE_URL: up.url, WEATHER_API_KEY: FAKE_KEY };
    const schema = z.object({ ...agentSchema.shape, ...toolsSchema.shape });
    const config = testConfig(schema, env);
    const { client } = await listen(
      withMcp('kilde', config, createAgentPart(config), createToolsPart(config)),
      config,
    );
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(['rewrite_concisely', 'get_weather']);
    const weather = await client.callTool({ name: 'get_weather', arguments: { city: 'Oslo' } });
    expect((weather.content as { text: string }[])[0]!.text).toContain('"city":"Oslo"');
    const rewrite = await client.callTool({ name: 'rewrite_concisely', arguments: { text: 'a b' } });
    expect((rewrite.content as { text: string }[])[0]!.text).toBe('{"rewritten":"short: a b"}');
  });
});
