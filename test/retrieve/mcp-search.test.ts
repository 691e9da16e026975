import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findService } from '../../src/cli/services.js';
import { ConfigError, parseConfig } from '../../src/config/parse.js';
import { toolsSchema } from '../../src/config/tools.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { FAKE_KEY, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { AUTH, logSink } from '../helpers/app.js';
import { makePdf } from '../helpers/make-pdf.js';
import { type Harness, multipartBody, startIngest } from '../ingest/helpers/harness.js';

/** Markdown files (one chunk each, with their heading breadcrumb) in three collections. */
const LONG = `# Rye bread\n\n## Baking\n\nDanish rye bread (rugbrød) is made with sourdough. ${'It rests overnight and bakes slowly. '.repeat(40)}`;
const DOCS: [string, string, string][] = [
  ['bread', 'kb', LONG],
  ['tax', 'kb', '# Taxes\n\nIncome tax in Denmark is high; municipal and state tax are paid on income.'],
  ['bikes', 'kb', '# Cycling\n\nBicycle lanes in Copenhagen are wide and busy all year.'],
  ['secret', 'kb-secret', '# Plans\n\nThe secret merger plan with the rye bread bakery.'],
  ...Array.from({ length: 25 }, (_, i): [string, string, string] => [
    `note-${i}`,
    'kb-many',
    `# Note ${i}\n\nMeeting note ${i} about the harbour project budget.`,
  ]),
];

let ingest: Harness;
let weather: FakeWeather;
const cleanups: (() => Promise<unknown>)[] = [];

async function put(fileId: string, collection: string, name: string, content: string | Buffer, type: string) {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: name, collection_name: collection, user_id: 'u1' },
    { name, content, type },
  );
  const res = await ingest.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
}

beforeAll(async () => {
  weather = await startFakeWeather();
  ingest = await startIngest({ CHUNK_SPLIT_BY: 'markdown', CHUNK_SIZE: '1000', CHUNK_OVERLAP: '0' });
  for (const [id, collection, text] of DOCS) await put(id, collection, `${id}.md`, text, 'text/markdown');
  const pdf = makePdf([
    [
      { text: 'Handbook', size: 20 },
      { text: 'Introduction to the handbook', size: 12 },
    ],
    [
      { text: 'Ferries', size: 20 },
      { text: 'The ferry timetable to Bornholm changes in winter.', size: 12 },
    ],
  ]);
  await put('handbook', 'kb', 'handbook.pdf', pdf, 'application/pdf');
  await ingest.settle(); // the retrieval apps open their own index on the data directory
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(async () => {
  await ingest.close();
  await weather.close();
});

async function connect(app: KildeApp): Promise<Client> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
  const client = new Client({ name: 'knowledge-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  cleanups.push(() => client.close());
  return client;
}

/** `kilde serve tools` as the CLI builds it (the service registry), listening on a loopback port. */
async function toolServer(env: Record<string, string>) {
  const service = findService('tools')!;
  const configured = service.configure({
    API_KEY: 'test-key',
    WEATHER_API_BASE_URL: weather.url,
    WEATHER_API_KEY: FAKE_KEY,
    KILDE_DATA_DIR: ingest.dataDir,
    EMBEDDING_PROVIDER: 'none',
    ...env,
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'debug' }, logSink().stream);
  const parts = await configured.create(log);
  const app = await buildApp(configured.kernel, { logger: log, parts });
  cleanups.push(() => app.close());
  await startParts(parts);
  return { app, client: await connect(app) };
}

/** `kilde serve all` over the same index directory. */
async function allServer(env: Record<string, string>) {
  const config = parseConfig(allSchema, { API_KEY: 'test-key', KILDE_DATA_DIR: ingest.dataDir, ...env });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, logSink().stream);
  const all = await composeAll(config, log);
  const app = await buildApp(config, { logger: log, parts: all.parts });
  cleanups.push(() => app.close());
  await startParts(all.parts);
  return { app, client: await connect(app) };
}

interface Compact {
  text: string;
  score: number;
  collection: string;
  citation: { file: string; page?: number; headings?: string[] };
}

async function searchKnowledge(client: Client, args: Record<string, unknown>): Promise<Compact[]> {
  const result = await client.callTool({ name: 'search_knowledge', arguments: args });
  const [content] = result.content as { type: string; text: string }[];
  return (JSON.parse(content!.text) as { results: Compact[] }).results;
}

async function rest(app: KildeApp, body: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/search', headers: AUTH, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as {
    documents: string[][];
    metadatas: Record<string, unknown>[][];
    distances: number[][];
  };
}

describe('search_knowledge over MCP (Streamable HTTP, the official SDK client)', () => {
  it('is offered by the tool server only for MCP_SEARCH_COLLECTIONS, besides get_weather', async () => {
    const off = await toolServer({});
    expect((await off.client.listTools()).tools.map((t) => t.name)).toEqual(['get_weather']);
    const err = await off.client
      .callTool({ name: 'search_knowledge', arguments: { query: 'rye bread' } })
      .catch((e: unknown) => e);
    expect((err as McpError).code).toBe(-32602);

    const on = await toolServer({ MCP_SEARCH_COLLECTIONS: 'kb, kb-many' });
    const { tools } = await on.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['get_weather', 'search_knowledge', 'list_collections']);
    const search = tools.find((t) => t.name === 'search_knowledge')!;
    expect(search.description!.split('\n')[0]).toBe(
      'Search the knowledge bases (uploaded documents) for passages relevant to a question.',
    );
    expect(search.inputSchema.required).toEqual(['query']);
    expect(search.annotations).toMatchObject({ readOnlyHint: true });
  });

  it('answers what POST /search answers, compacted: text truncated, citation, same scores', async () => {
    const { app, client } = await allServer({ MCP_SEARCH_COLLECTIONS: '["kb"]' });
    const hits = await searchKnowledge(client, { query: 'rye bread sourdough', k: 3 });
    const full = await rest(app, { queries: ['rye bread sourdough'], collection_names: ['kb'], k: 3 });
    expect(hits.map((h) => h.score)).toEqual(full.distances[0]!.map((s) => Math.round(s * 1000) / 1000));
    expect(hits.map((h) => h.citation.file)).toEqual(full.metadatas[0]!.map((m) => m.name));
    expect(hits[0]!.citation).toEqual({ file: 'bread.md', headings: ['Rye bread', 'Baking'] });
    // The long chunk is cut to 800 characters in the tool result, whole in the REST answer.
    expect(full.documents[0]![0]!.length).toBeGreaterThan(800);
    expect([...hits[0]!.text]).toHaveLength(801);
    expect(hits[0]!.text.endsWith('…')).toBe(true);
    expect(full.documents[0]![0]!.startsWith(hits[0]!.text.slice(0, 800))).toBe(true);
  });

  it('calls the very service behind POST /search on one app (serve all)', async () => {
    const { app, client } = await allServer({ MCP_SEARCH_COLLECTIONS: 'kb' });
    const before = await app.inject({ method: 'GET', url: '/metrics', headers: AUTH });
    const count = (text: string) =>
      Number(/search_requests_total\{mode="lexical",outcome="ok"\} (\d+)/.exec(text)?.[1] ?? 0);
    await searchKnowledge(client, { query: 'income tax' });
    await rest(app, { queries: ['income tax'], collection_names: ['kb'] });
    const after = await app.inject({ method: 'GET', url: '/metrics', headers: AUTH });
    // One search service, one set of search metrics: both calls counted on it.
    expect(count(after.body) - count(before.body)).toBe(2);
    const names = (await client.listTools()).tools.map((t) => t.name);
    // No LLM configured here: rewrite_concisely, which would always fail, is not listed.
    expect(names).toEqual(['search_knowledge', 'list_collections']);
  });

  it('cites the page of a PDF passage (1-based, as people count)', async () => {
    const { client } = await toolServer({ MCP_SEARCH_COLLECTIONS: 'kb' });
    const [hit] = await searchKnowledge(client, { query: 'ferry timetable Bornholm', k: 1 });
    expect(hit!.citation).toMatchObject({ file: 'handbook.pdf', page: 2 });
  });

  it('searches only MCP_SEARCH_COLLECTIONS: other names are refused, whether they exist or not', async () => {
    const { client } = await toolServer({ MCP_SEARCH_COLLECTIONS: 'kb' });
    for (const names of [['kb-secret'], ['kb', 'kb-secret'], ['no-such-kb']]) {
      const err = await client
        .callTool({ name: 'search_knowledge', arguments: { query: 'rye bread', collection_names: names } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(-32602);
      expect((err as McpError).message).toMatch(/Not searchable here: .*\(see list_collections\)/);
    }
    // Without names: every allowed collection, and nothing else.
    const hits = await searchKnowledge(client, { query: 'secret merger plan rye bread bakery', k: 20 });
    expect(hits.length).toBeGreaterThan(0);
    expect(new Set(hits.map((h) => h.collection))).toEqual(new Set(['kb']));
  });

  it('clamps k to 1..20 instead of refusing it', async () => {
    const { client } = await toolServer({ MCP_SEARCH_COLLECTIONS: 'kb-many' });
    expect(await searchKnowledge(client, { query: 'harbour project budget', k: 1000 })).toHaveLength(20);
    expect(await searchKnowledge(client, { query: 'harbour project budget', k: 0 })).toHaveLength(1);
    expect(await searchKnowledge(client, { query: 'harbour project budget' })).toHaveLength(5);
    const err = await client
      .callTool({ name: 'search_knowledge', arguments: { query: '   ' } })
      .catch((e: unknown) => e);
    expect((err as McpError).code).toBe(-32602);
  });

  it('list_collections names the allowed collections and their passages', async () => {
    const { client } = await toolServer({ MCP_SEARCH_COLLECTIONS: 'kb,kb-many,empty-kb' });
    const result = await client.callTool({ name: 'list_collections', arguments: {} });
    const [content] = result.content as { text: string }[];
    expect(JSON.parse(content!.text)).toEqual({
      collections: [
        // Three Markdown files of one chunk each, and the PDF's two sections.
        { name: 'kb', passages: 5 },
        { name: 'kb-many', passages: 25 },
        { name: 'empty-kb', passages: 0 },
      ],
    });
  });
});

describe('MCP_SEARCH_COLLECTIONS configuration', () => {
  it('takes a comma-separated or JSON list; searching needs an EMBEDDING_PROVIDER decision', () => {
    const base = { API_KEY: 'k', WEATHER_API_KEY: 'w' };
    const lexical = { ...base, EMBEDDING_PROVIDER: 'none' };
    expect(parseConfig(toolsSchema, base).MCP_SEARCH_COLLECTIONS).toEqual([]);
    expect(
      parseConfig(toolsSchema, { ...lexical, MCP_SEARCH_COLLECTIONS: 'a, b' }).MCP_SEARCH_COLLECTIONS,
    ).toEqual(['a', 'b']);
    expect(() => parseConfig(toolsSchema, { ...base, MCP_SEARCH_COLLECTIONS: '["a"]' })).toThrow(
      /EMBEDDING_PROVIDER is required when MCP_SEARCH_COLLECTIONS is set/,
    );
    expect(
      parseConfig(toolsSchema, { ...lexical, MCP_SEARCH_COLLECTIONS: '["a", "b c"]' }).MCP_SEARCH_COLLECTIONS,
    ).toEqual(['a', 'b c']);
    expect(() => parseConfig(toolsSchema, { ...base, MCP_SEARCH_COLLECTIONS: 'a' })).toThrow(ConfigError);
  });
});
