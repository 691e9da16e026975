import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig } from '../../src/config/parse.js';
import { tracingPiece } from '../../src/config/telemetry.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { samplerOf, tracesUrl } from '../../src/telemetry/sdk.js';
import { tracingWanted } from '../../src/telemetry/start.js';
import { tracingActive } from '../../src/telemetry/tracing.js';
import { chatBody, type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { startQdrantFake } from '../fakes/qdrant-server.js';
import type { RecordedRequest } from '../fakes/recording-server.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';
import { AUTH, logSink } from '../helpers/app.js';
import { type Harness, multipartBody, startIngest } from '../ingest/helpers/harness.js';
import { ONE_CHUNK } from '../retrieve/helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from '../retrieve/helpers/retrieve.js';
import {
  CALLER_SPAN,
  CALLER_TRACE,
  only,
  parentOf,
  renderTree,
  TRACEPARENT,
  traceInMemory,
  traceOf,
} from './helpers.js';

/** One chunk each (ONE_CHUNK). */
const DOCS: Record<string, string> = {
  bikes: 'Bicycle lanes in Copenhagen are wide. Cyclists ride on separate bicycle paths all year.',
  bread: 'Danish rye bread (rugbrød) is dark, dense and made with sourdough and whole grains.',
  tax: 'Income tax in Denmark is high. The municipal tax and the state tax are paid on income.',
};

let embed: FakeEmbeddingsServer;
let llm: FakeChatServer;
let rerank: FakeRerankServer;
let ingest: Harness;
let memory: ReturnType<typeof traceInMemory>;
const open: RetrieveHarness[] = [];

const EMBEDDING = {
  EMBEDDING_PROVIDER: 'http-compat',
  EMBEDDING_MODEL: 'hash',
  EMBEDDING_DIM: '128',
  EMBEDDING_MAX_RETRIES: '0',
};

beforeAll(async () => {
  [embed, llm, rerank] = await Promise.all([
    startFakeOpenAIEmbeddings({ dim: 128 }),
    startFakeChatServer(),
    startFakeRerankServer(),
  ]);
  // Before any app is built: the kernel registers its request spans only while tracing is on.
  memory = traceInMemory();
  ingest = await startIngest({ ...EMBEDDING, EMBEDDING_API_BASE_URL: embed.baseUrl, ...ONE_CHUNK });
  for (const [id, text] of Object.entries(DOCS)) await put(id, text);
  await ingest.settle(); // the retrieval apps open their own index on the data directory
});

afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
  memory.exporter.reset();
  embed.reset();
  llm.requests.length = 0;
  rerank.requests.length = 0;
});

afterAll(async () => {
  await ingest?.close();
  await memory?.tracing.shutdown();
  await Promise.all([embed?.close(), llm?.close(), rerank?.close()]);
});

async function put(fileId: string, text: string, headers: Record<string, string> = {}) {
  const { body, headers: form } = multipartBody(
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: 'kb', user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );
  const res = await ingest.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...form, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
}

async function retrieve(env: Record<string, string> = {}) {
  const r = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    ...EMBEDDING,
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ...env,
  });
  open.push(r);
  return r;
}

const spans = () => traceOf(memory.exporter.getFinishedSpans(), CALLER_TRACE);
const named = (list: readonly ReadableSpan[], name: string) => list.filter((s) => s.name === name);
const childrenOf = (list: readonly ReadableSpan[], parent: ReadableSpan) =>
  list.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

/** The `traceparent` an upstream received, as trace id and parent span id. */
function received(req: RecordedRequest): { traceId: string; spanId: string } {
  const [, traceId, spanId] = String(req.headers.traceparent ?? '').split('-');
  return { traceId: traceId ?? '', spanId: spanId ?? '' };
}

/** The CLIENT span an upstream request came from, checked against the header it received. */
function clientSpanOf(list: readonly ReadableSpan[], req: RecordedRequest): ReadableSpan {
  const { traceId, spanId } = received(req);
  expect(traceId).toBe(CALLER_TRACE);
  const span = list.find((s) => s.spanContext().spanId === spanId);
  expect(span?.kind).toBe(SpanKind.CLIENT);
  return span!;
}

function expectServerSpan(list: readonly ReadableSpan[], name: string, route: string) {
  const server = only(list, name);
  expect(server.kind).toBe(SpanKind.SERVER);
  // The caller's span is the parent: the trace continues.
  expect(server.parentSpanContext?.spanId).toBe(CALLER_SPAN);
  expect(server.attributes).toMatchObject({
    'http.request.method': name.split(' ')[0],
    'http.route': route,
    'http.response.status_code': 200,
    'url.path': route,
  });
  return server;
}

describe('traces of an ingest', () => {
  it('PUT /api/v1/ingest: the request span, the upload, the file and each stage under it, the embedding call', async () => {
    await put('ferry', 'The ferry to Samsø leaves at nine from Hou harbour.', { traceparent: TRACEPARENT });
    const list = spans();
    const server = expectServerSpan(list, 'PUT /api/v1/ingest', '/api/v1/ingest');
    expect(parentOf(list, only(list, 'kilde.ingest.receive'))).toBe(server);
    const file = only(list, 'kilde.ingest.file');
    expect(parentOf(list, file)).toBe(server);
    expect(file.attributes).toMatchObject({
      'kilde.file_id': 'ferry',
      'kilde.collection': 'kb',
      'kilde.chunks.count': 1,
      'kilde.extraction.engine': 'inprocess',
    });
    const version = file.attributes['kilde.ingest.version'];
    expect(version).toEqual(expect.any(String));
    // Every stage of the pipeline, once each, in order, as the file's children.
    const stages = childrenOf(list, file)
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
      .map((s) => s.name);
    expect(stages).toEqual([
      'kilde.ingest.convert',
      'kilde.ingest.chunk',
      'kilde.ingest.dense',
      'kilde.ingest.sparse',
      'kilde.ingest.write',
    ]);
    // The commit: the version made visible, under the write stage.
    const publish = only(list, 'kilde.ingest.publish');
    expect(parentOf(list, publish)?.name).toBe('kilde.ingest.write');
    expect(publish.attributes).toMatchObject({ 'kilde.ingest.version': version, 'kilde.file_id': 'ferry' });
    // The embedding request carried the trace, from a CLIENT span under the dense stage.
    const client = clientSpanOf(list, embed.embeddingRequests().at(-1)!);
    expect(parentOf(list, client)?.name).toBe('kilde.ingest.dense');
    expect(client.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'url.full': `${embed.baseUrl}/embeddings`,
    });
    // Never the document's text.
    expect(JSON.stringify(list.map((s) => s.attributes))).not.toContain('ferry to');
  });

  it('a failed stage is an error span with its code; the request span is not an error for a 4xx', async () => {
    const { body, headers } = multipartBody(
      { file_id: 'empty', filename: 'empty.txt', collection_name: 'kb', user_id: 'u1' },
      { name: 'empty.txt', content: '   ', type: 'text/plain' },
    );
    const res = await ingest.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers, traceparent: TRACEPARENT },
      payload: body,
    });
    expect(res.statusCode).toBe(422);
    const list = spans();
    const server = only(list, 'PUT /api/v1/ingest');
    expect(server.attributes['http.response.status_code']).toBe(422);
    expect(server.attributes['kilde.error.code']).toBe('EXTRACTION_FAILED');
    expect(server.status.code).toBe(0);
    const file = only(list, 'kilde.ingest.file');
    expect(file.status.code).toBe(2);
    expect(file.attributes['error.type']).toBe('EXTRACTION_FAILED');
  });
});

describe('traces of concurrent ingests', () => {
  it('files that share a pipeline pass: the pass is a trace of its own, linked to each file span', async () => {
    // While one ingest runs, small text files arriving meanwhile join one shared pass.
    const parents = ['a1', 'a2', 'a3', 'a4'].map(
      (_id, i) => `00-${CALLER_TRACE.slice(0, 30)}1${i}-${CALLER_SPAN}-01`,
    );
    await Promise.all(
      ['a1', 'a2', 'a3', 'a4'].map((id, i) =>
        put(id, `Ferry timetable ${id}: the ferry leaves at ${i + 7} o'clock.`, { traceparent: parents[i]! }),
      ),
    );
    const all = memory.exporter.getFinishedSpans();
    const passes = all.filter((s) => s.name === 'kilde.ingest.pass');
    if (passes.length === 0) return; // every file ran alone this time: nothing shared to check
    for (const pass of passes) {
      expect(pass.parentSpanContext).toBeUndefined();
      expect(pass.links.length).toBe(pass.attributes['kilde.pass.files']);
      for (const link of pass.links) {
        const file = all.find((s) => s.spanContext().spanId === link.context.spanId);
        expect(file?.name).toBe('kilde.ingest.file');
        expect(file?.spanContext().traceId).toBe(link.context.traceId);
      }
      // The pass's stages are its children, in its own trace.
      const stages = all
        .filter((s) => s.parentSpanContext?.spanId === pass.spanContext().spanId)
        .map((s) => s.name);
      expect(stages).toEqual(expect.arrayContaining(['kilde.ingest.convert', 'kilde.ingest.write']));
    }
  });
});

describe('traces of POST /search', () => {
  const body = { queries: ['rye bread sourdough'], collection_names: ['kb'], k: 2 };
  const headers = { ...AUTH, traceparent: TRACEPARENT };

  it('dense: query generation, then one search span with its embed and dense stages; hits as attributes', async () => {
    const r = await retrieve();
    const { status, json } = await r.search(body, headers);
    expect(status).toBe(200);
    const list = spans();
    const server = expectServerSpan(list, 'POST /search', '/search');
    expect(parentOf(list, only(list, 'kilde.search.queries'))).toBe(server);
    const search = only(list, 'kilde.search');
    expect(parentOf(list, search)).toBe(server);
    expect(search.attributes).toMatchObject({
      'kilde.search.mode': 'dense',
      'kilde.collections': ['kb'],
      'kilde.search.k': 2,
      'kilde.hits.count': json.documents[0].length,
      'kilde.hits.scores': json.distances[0],
    });
    expect(childrenOf(list, search).map((s) => s.name)).toEqual(['kilde.search.embed', 'kilde.search.dense']);
    const dense = only(list, 'kilde.search.dense');
    expect(dense.attributes['kilde.search.limit']).toBe(4);
    expect(dense.attributes['kilde.hits.count']).toBeGreaterThanOrEqual(json.documents[0].length);
    expect((dense.attributes['kilde.hits.ids'] as string[]).slice(0, json.documents[0].length)).toEqual(
      search.attributes['kilde.hits.ids'],
    );
    // The query embedding request carried the trace from its CLIENT span under the embed stage.
    const client = clientSpanOf(list, embed.embeddingRequests().at(-1)!);
    expect(parentOf(list, client)?.name).toBe('kilde.search.embed');
    // Never the query's text.
    expect(JSON.stringify(list.map((s) => s.attributes))).not.toContain('sourdough');
    // The request's log line names its trace and span.
    const line = r.logs.lines.find((l) => String(l.msg).startsWith('POST /search 200'));
    expect(line).toMatchObject({ trace_id: CALLER_TRACE, span_id: server.spanContext().spanId });
  });

  it('hybrid: the lexical analysis and the fused search in the index', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    expect((await r.search(body, headers)).status).toBe(200);
    const list = spans();
    const search = only(list, 'kilde.search');
    expect(search.attributes['kilde.search.mode']).toBe('hybrid');
    expect(childrenOf(list, search).map((s) => s.name)).toEqual([
      'kilde.search.embed',
      'kilde.search.analyse',
      'kilde.search.hybrid',
    ]);
    expect(only(list, 'kilde.search.hybrid').attributes).toMatchObject({
      'kilde.fusion.where': 'index',
      'kilde.hits.count': expect.any(Number),
    });

    // With explain, the branches are read too: each a span beside the fused one.
    memory.exporter.reset();
    expect((await r.search({ ...body, explain: true }, headers)).status).toBe(200);
    const explained = spans();
    expect(named(explained, 'kilde.search.dense')).toHaveLength(1);
    expect(only(explained, 'kilde.search.lexical').attributes['kilde.lexical.where']).toBe('index');
  });

  it('hybrid without a lexical index: dense and client BM25 branches, fused in Kilde', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true', ENABLE_SPARSE_EMBEDDINGS: 'false' });
    const { status } = await r.search(body, headers);
    expect(status).toBe(200);
    const list = spans();
    const search = only(list, 'kilde.search');
    if (search.attributes['kilde.search.mode'] !== 'dense+client-bm25') return; // the collection has its index
    expect(childrenOf(list, search).map((s) => s.name)).toEqual(
      expect.arrayContaining(['kilde.search.dense', 'kilde.search.lexical', 'kilde.search.fusion']),
    );
  });

  it('rerank: the reranker call under its stage, with the reranked ids and raw scores', async () => {
    const r = await retrieve({
      ENABLE_RERANKING: 'true',
      RERANK_API_BASE_URL: rerank.url,
      RERANK_MODEL: 'bge-reranker',
    });
    const { status, json } = await r.search(body, headers);
    expect(status).toBe(200);
    const list = spans();
    const stage = only(list, 'kilde.search.rerank');
    expect(parentOf(list, stage)?.name).toBe('kilde.search');
    expect(stage.attributes['kilde.rerank.candidates']).toBeGreaterThanOrEqual(json.documents[0].length);
    expect(stage.attributes['kilde.hits.count']).toBe(json.documents[0].length);
    const client = clientSpanOf(list, rerank.requests.at(-1)!);
    expect(parentOf(list, client)).toBe(stage);
    expect(client.attributes['url.full']).toBe(`${rerank.url}/v1/rerank`);
  });

  it('agentic: the agent span holds the model calls and the searches it ran', async () => {
    llm.mode = {
      kind: 'script',
      answer: (_req, n) =>
        n === 0
          ? { toolCalls: [{ name: 'retrieve', arguments: JSON.stringify({ queries: ['rye bread'] }) }] }
          : { content: 'DONE' },
    };
    const r = await retrieve({
      ENABLE_AGENTIC_RAG: 'true',
      AGENT_API_BASE_URL: llm.baseUrl,
      AGENT_MODEL: 'tool-model',
    });
    const { status } = await r.search({ ...body, queries: ['what is rugbrød made of'] }, headers);
    expect(status).toBe(200);
    const list = spans();
    const server = only(list, 'POST /search');
    const agent = only(list, 'kilde.search.agent');
    expect(parentOf(list, agent)).toBe(server);
    expect(agent.attributes).toMatchObject({ 'kilde.agent.stop': 'accepted', 'kilde.agent.llm_calls': 2 });
    // The seed search and the tool call's search, each a search span under the agent.
    const searches = named(list, 'kilde.search');
    expect(searches.length).toBeGreaterThanOrEqual(2);
    for (const s of searches) expect(parentOf(list, s)).toBe(agent);
    // Both model calls carried the trace, from CLIENT spans under the agent.
    const calls = llm.requests.filter((q) => q.path === '/v1/chat/completions');
    expect(calls).toHaveLength(2);
    expect(chatBody(calls[0]!).model).toBe('tool-model');
    for (const call of calls) expect(parentOf(list, clientSpanOf(list, call))).toBe(agent);
    // The tree an operator sees (docs/operations.md shows one).
    expect(renderTree(list)[0]).toBe('POST /search');
  });
});

describe('traces with Qdrant as the index', () => {
  it('the index requests carry the trace: the version written under the publish stage, the query under the dense stage', async () => {
    const qdrant = await startQdrantFake();
    const env = {
      ...EMBEDDING,
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      VECTORDB_URI: qdrant.url,
      ...ONE_CHUNK,
    };
    const q = await startIngest(env);
    try {
      const { body, headers } = multipartBody(
        { file_id: 'ferry', filename: 'ferry.txt', collection_name: 'kb', user_id: 'u1' },
        { name: 'ferry.txt', content: 'The ferry to Samsø leaves at nine.', type: 'text/plain' },
      );
      const res = await q.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers, traceparent: TRACEPARENT },
        payload: body,
      });
      expect(res.statusCode, res.body).toBe(200);
      const r = await retrieve({ VECTORDB_URI: qdrant.url });
      expect(
        (
          await r.search(
            { queries: ['ferry'], collection_names: ['kb'], k: 2 },
            { ...AUTH, traceparent: TRACEPARENT },
          )
        ).status,
      ).toBe(200);
      const list = spans();
      const traced = qdrant.requests.filter((rec) =>
        String(rec.headers.traceparent ?? '').includes(CALLER_TRACE),
      );
      const stagesOf = (method: string, path: RegExp) =>
        traced
          .filter((rec) => rec.method === method && path.test(rec.path))
          .map((rec) => {
            const client = list.find(
              (s) => s.spanContext().spanId === String(rec.headers.traceparent).split('-')[2],
            );
            expect(client?.kind).toBe(SpanKind.CLIENT);
            return parentOf(list, client!)?.name;
          });
      // The version goes in one batch request (src/versions/write-together.ts).
      expect(stagesOf('POST', /\/points\/batch$/)).toContain('kilde.ingest.publish');
      expect(stagesOf('POST', /\/points\/query$/)).toContain('kilde.search.dense');
    } finally {
      await q.close();
      await qdrant.close();
    }
  });
});

describe('traces of an MCP tool call', () => {
  it('search_knowledge: the search span under the POST /mcp request that called the tool', async () => {
    const config = parseConfig(allSchema, {
      API_KEY: 'test-key',
      KILDE_DATA_DIR: ingest.dataDir,
      ...EMBEDDING,
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      MCP_SEARCH_COLLECTIONS: '["kb"]',
    });
    const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, logSink().stream);
    const all = await composeAll(config, log);
    const app = await buildApp(config, { logger: log, parts: all.parts });
    try {
      await startParts(all.parts);
      await app.listen({ host: '127.0.0.1', port: 0 });
      const url = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
      const client = new Client({ name: 'traces-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { ...AUTH, traceparent: TRACEPARENT } },
        }),
      );
      try {
        await client.callTool({
          name: 'search_knowledge',
          arguments: { query: 'rye bread' },
        });
      } finally {
        await client.close();
      }
    } finally {
      await app.close();
    }
    const list = spans();
    const search = only(list, 'kilde.search');
    const request = parentOf(list, search);
    expect(request?.name).toBe('POST /mcp');
    expect(request?.kind).toBe(SpanKind.SERVER);
    expect(request?.parentSpanContext?.spanId).toBe(CALLER_SPAN);
  });
});

describe('configuration', () => {
  const parse = (env: Record<string, string>) => parseConfig(z.object(tracingPiece), env);

  it('parses the OTEL_* variables, and refuses a sampler ratio outside [0, 1]', () => {
    const config = parse({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER_ARG: '0.5' });
    expect(config).toMatchObject({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'kilde',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_TRACES_SAMPLER_ARG: 0.5,
    });
    expect(parse({}).OTEL_TRACES_EXPORTER).toBe('none');
    expect(() => parse({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(
      /OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/,
    );
    expect(() => parse({ OTEL_TRACES_EXPORTER: 'jaeger' })).toThrow(/OTEL_TRACES_EXPORTER/);
  });

  it('is off by default; otlp turns it on, OTEL_SDK_DISABLED off again', () => {
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_SDK_DISABLED: false })).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: false })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: true })).toBe(false);
  });

  it('sends to {endpoint}/v1/traces, or to the traces endpoint as it is', () => {
    expect(
      tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined }),
    ).toBe('http://localhost:4318/v1/traces');
    expect(
      tracesUrl({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
      }),
    ).toBe('http://collector:4318/v1/traces');
    expect(
      tracesUrl({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/otlp/traces',
      }),
    ).toBe('http://tempo:4318/otlp/traces');
  });

  it('names the sampler OTEL_TRACES_SAMPLER asks for', () => {
    expect(
      samplerOf({
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        OTEL_TRACES_SAMPLER_ARG: undefined,
      }).toString(),
    ).toBe(
      'ParentBased{root=AlwaysOnSampler, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}',
    );
    expect(samplerOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 0.25 }).toString()).toBe(
      'TraceIdRatioBased{0.25}',
    );
  });
});

describe('with tracing off', () => {
  it('records nothing and forwards no traceparent, even beside another library’s tracer provider', async () => {
    await memory.tracing.shutdown();
    expect(tracingActive()).toBe(false);
    // Another library in the process (the `ai` SDK, LanceDB) may register a provider: Kilde still
    // starts no span of its own and sends no header.
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    try {
      // Apps built now, with tracing off, as `kilde serve` builds them without OTEL_TRACES_EXPORTER.
      const quiet = await startIngest({ ...EMBEDDING, EMBEDDING_API_BASE_URL: embed.baseUrl, ...ONE_CHUNK });
      try {
        const { body: form, headers: formHeaders } = multipartBody(
          { file_id: 'quiet', filename: 'quiet.txt', collection_name: 'kb', user_id: 'u1' },
          { name: 'quiet.txt', content: 'A quiet file about lighthouses on Anholt.', type: 'text/plain' },
        );
        const res = await quiet.app.inject({
          method: 'PUT',
          url: '/api/v1/ingest',
          headers: { ...AUTH, ...formHeaders, traceparent: TRACEPARENT },
          payload: form,
        });
        expect(res.statusCode, res.body).toBe(200);
      } finally {
        await quiet.close();
      }
      const r = await retrieve({ ENABLE_RERANKING: 'true', RERANK_API_BASE_URL: rerank.url });
      expect((await r.search(body(), { ...AUTH, traceparent: TRACEPARENT })).status).toBe(200);
      expect(exporter.getFinishedSpans()).toEqual([]);
      expect(embed.requests.length).toBeGreaterThan(0);
      for (const req of [...embed.requests, ...rerank.requests])
        expect(req.headers.traceparent).toBeUndefined();
    } finally {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    }
  });
});

function body() {
  return { queries: ['lighthouses'], collection_names: ['kb'], k: 2 };
}
