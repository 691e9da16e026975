import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SERVICES } from '../../src/cli/services.js';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, closeParts, type KildeApp, type ServicePart, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { McpEndpoint } from '../../src/mcp/endpoint.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { FAKE_KEY, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { logSink } from '../helpers/app.js';

/**
 * What an MCP client sees of each service (issue #30): the server names itself after the service
 * (`kilde` for `serve all`, `kilde-agent`, `kilde-tools`), and lists a tool only when what it calls
 * is configured: no `rewrite_concisely` without an LLM, no `get_weather` without the weather API.
 */
let llm: FakeChatServer;
let up: FakeWeather;
let app: KildeApp | undefined;
let client: Client | undefined;
let dir: string;

beforeAll(async () => {
  [llm, up] = await Promise.all([startFakeChatServer(), startFakeWeather()]);
  dir = mkdtempSync(join(tmpdir(), 'kilde-mcp-per-service-'));
});
afterAll(async () => {
  await Promise.all([llm.close(), up.close()]);
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await client?.close();
  await app?.close();
  client = undefined;
  app = undefined;
});

async function connect(kernel: Parameters<typeof buildApp>[0], parts: ServicePart[]) {
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  app = await buildApp(kernel, { logger: log, parts });
  await startParts(parts);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
  client = new Client({ name: 'per-service-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  return { name: client.getServerVersion()?.name, tools };
}

async function all(env: Record<string, string>, sub: string) {
  const config = parseConfig(allSchema, {
    API_KEY: 'test-key',
    KILDE_DATA_DIR: join(dir, sub),
    EMBEDDING_PROVIDER: 'none',
    ...env,
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  return connect(config, (await composeAll(config, log)).parts);
}

async function single(name: 'agent' | 'tools', env: Record<string, string>) {
  const service = SERVICES.find((s) => s.name === name)!;
  const configured = service.configure({ API_KEY: 'test-key', ...env });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  return connect(configured.kernel, await configured.create(log));
}

describe('kilde serve all', () => {
  it('is `kilde`, and lists neither rewrite_concisely without an LLM nor get_weather without its API', async () => {
    const seen = await all({ MCP_SEARCH_COLLECTIONS: 'docs' }, 'bare');
    expect(seen).toEqual({ name: 'kilde', tools: ['search_knowledge', 'list_collections'] });
  });

  it('lists them once their upstreams are configured', async () => {
    const seen = await all(
      { AGENT_API_BASE_URL: llm.baseUrl, WEATHER_API_BASE_URL: up.url, WEATHER_API_KEY: FAKE_KEY },
      'configured',
    );
    expect(seen).toEqual({ name: 'kilde', tools: ['rewrite_concisely', 'get_weather'] });
  });

  it('has one /mcp endpoint, the last part, which every service only contributes tools to', async () => {
    const config = parseConfig(allSchema, {
      API_KEY: 'test-key',
      KILDE_DATA_DIR: join(dir, 'one-endpoint'),
      EMBEDDING_PROVIDER: 'none',
      AGENT_API_BASE_URL: llm.baseUrl,
      WEATHER_API_BASE_URL: up.url,
      WEATHER_API_KEY: FAKE_KEY,
      MCP_SEARCH_COLLECTIONS: 'docs',
    });
    const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
    const { parts } = await composeAll(config, log);
    try {
      expect(parts.filter((p) => p instanceof McpEndpoint)).toHaveLength(1);
      expect(parts.at(-1)).toBeInstanceOf(McpEndpoint);
      expect(parts.map((p) => p.name)).toEqual([
        'embedded-index',
        'ingest',
        'retrieve',
        'agent',
        'knowledge',
        'tools',
        'mcp',
      ]);
    } finally {
      await closeParts(parts, log);
    }
  });
});

describe('the single services', () => {
  it('kilde serve agent is `kilde-agent`', async () => {
    expect(await single('agent', { AGENT_API_BASE_URL: llm.baseUrl })).toEqual({
      name: 'kilde-agent',
      tools: ['rewrite_concisely'],
    });
  });

  it('kilde serve tools is `kilde-tools`', async () => {
    expect(await single('tools', { WEATHER_API_BASE_URL: up.url, WEATHER_API_KEY: FAKE_KEY })).toEqual({
      name: 'kilde-tools',
      tools: ['get_weather'],
    });
  });
});
