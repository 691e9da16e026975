import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KildeApp } from '../../src/http/app.js';
import { chatBody, type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';
import { startServeAll } from '../helpers/serve-all.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { CODE_QUERY, fileIds, LABELLED } from './helpers/labelled.js';

/**
 * The whole HTTP surface of `kilde serve all` over Qdrant answers like it does over LanceDB: the
 * same requests (ingest, re-ingest, versions and restore, delete, chunk inspection, listings with
 * cursors, every `/search` path, Dify `/retrieval`, MCP `search_knowledge`, eval) on both engines,
 * with the same models (hash embeddings, a fake reranker and LLM). Over the Qdrant fake in the
 * default suite; over a real server with `npm run test:qdrant-live` (the fake then proxies to it).
 */
const DIM = 32;
const KEY = 'parity-key';
const H = { authorization: `Bearer ${KEY}` };

interface Running {
  app: KildeApp;
  mcp: Client;
  close(): Promise<void>;
}

let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let rerank: FakeRerankServer;
let llm: FakeChatServer;
const engines: Record<'lancedb' | 'qdrant', Running> = {} as never;

async function start(vectordb: string | undefined): Promise<Running> {
  const kilde = await startServeAll(
    {
      API_KEY: KEY,
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      EMBEDDING_MODEL: 'hash',
      EMBEDDING_DIM: String(DIM),
      ENABLE_SPARSE_EMBEDDINGS: 'true',
      ENABLE_HYBRID_SEARCH: 'true',
      RERANK_API_BASE_URL: rerank.url,
      ENABLE_RERANKING: 'true',
      ENABLE_QUERY_GENERATION: 'false',
      ENABLE_AGENTIC_RAG: 'true',
      AGENT_API_BASE_URL: llm.baseUrl,
      KEEP_VERSIONS: '2',
      ENABLE_INSPECTION_API: 'true',
      CHUNK_SPLIT_BY: 'word',
      CHUNK_SIZE: '200',
      CHUNK_OVERLAP: '0',
      MCP_SEARCH_COLLECTIONS: 'kb',
      ...(vectordb ? { VECTORDB_URI: vectordb } : {}),
    },
    'kilde-parity-',
  );
  const app = kilde.app;
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
  const mcp = new Client({ name: 'parity', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(url));
  return {
    app,
    mcp,
    async close() {
      await mcp.close();
      await kilde.close();
    },
  };
}

async function put(r: Running, fileId: string, text: string, collection = 'kb') {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: collection, user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );
  const res = await r.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...H, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { chunks_count: number };
}

async function call(r: Running, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  const res = await r.app.inject({ method, url, headers: H, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, json: res.body ? res.json() : undefined };
}

const search = async (r: Running, body: Record<string, unknown>) => {
  const res = await call(r, 'POST', '/search', { collection_names: ['kb'], k: 5, ...body });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json as { metadatas: Record<string, unknown>[][]; distances: number[][]; documents: string[][] };
};

beforeAll(async () => {
  [qdrant, embed, rerank, llm] = await Promise.all([
    startQdrantFake(),
    startFakeOpenAIEmbeddings({ dim: DIM }),
    startFakeRerankServer(),
    startFakeChatServer(),
  ]);
  // The agentic loop: one `retrieve` call with the user's words, then a final answer.
  llm.mode = {
    kind: 'script',
    answer: (req) => {
      const messages = chatBody(req).messages as { role: string; content: unknown }[];
      if (messages.some((m) => m.role === 'tool')) return { content: 'done' };
      const user = [...messages].reverse().find((m) => m.role === 'user');
      const query = typeof user?.content === 'string' ? user.content : 'bicycle lanes';
      return { toolCalls: [{ name: 'retrieve', arguments: JSON.stringify({ queries: [query] }) }] };
    },
  };
  engines.lancedb = await start(undefined);
  engines.qdrant = await start(qdrant.url);
  for (const r of Object.values(engines)) {
    for (const [id, text] of Object.entries(LABELLED)) await put(r, id, text);
    await put(r, 'other', 'Bicycle lanes in Aarhus are narrow; this belongs to another collection.', 'kb-2');
  }
});

afterAll(async () => {
  for (const r of Object.values(engines)) await r?.close();
  await Promise.all([qdrant?.close(), embed?.close(), rerank?.close(), llm?.close()]);
});

/** The same request on both engines: top hits by file id, and scores within [0, 1]. */
async function both(body: Record<string, unknown>) {
  const out: Record<string, { ids: unknown[]; scores: number[] }> = {};
  for (const [name, r] of Object.entries(engines)) {
    const json = await search(r, body);
    out[name] = { ids: fileIds(json.metadatas[0] ?? []), scores: json.distances[0] ?? [] };
    for (const s of out[name].scores) expect(s).toBeGreaterThanOrEqual(0);
  }
  return out as Record<'lancedb' | 'qdrant', { ids: unknown[]; scores: number[] }>;
}

describe('the same HTTP answers over LanceDB and over Qdrant', () => {
  it('dense: same hits in the same order, same scores (normalised cosine)', async () => {
    const { lancedb, qdrant: q } = await both({
      queries: ['rye bread sourdough'],
      pipeline: { hybrid: false, rerank: false },
    });
    expect(q.ids).toEqual(lancedb.ids);
    for (const [i, s] of q.scores.entries()) expect(s).toBeCloseTo(lancedb.scores[i]!, 4);
  });

  it('hybrid: the rare code word wins on both (server-side RRF on Qdrant)', async () => {
    const { lancedb, qdrant: q } = await both({ queries: [CODE_QUERY], pipeline: { rerank: false } });
    expect(lancedb.ids[0]).toBe('pump');
    expect(q.ids[0]).toBe('pump');
  });

  it('hybrid and reranked: the same first hit, the same reranked order', async () => {
    const hy = await both({ queries: ['income tax municipal'], pipeline: { rerank: false } });
    expect(hy.qdrant.ids[0]).toBe('tax');
    expect(hy.lancedb.ids[0]).toBe('tax');
    const rr = await both({ queries: ['income tax municipal'], pipeline: { rerank: true } });
    expect(rr.qdrant.ids).toEqual(rr.lancedb.ids);
  });

  it('filters and tenancy: only the requested collection, a source filter narrows to one file', async () => {
    const r = await both({ queries: ['bicycle lanes'], filter: { file_ids: ['bikes'] } });
    expect(r.qdrant.ids).toEqual(['bikes']);
    expect(r.lancedb.ids).toEqual(['bikes']);
    const other = await both({ queries: ['bicycle lanes'], collection_names: ['kb-2'] });
    expect(other.qdrant.ids).toEqual(['other']);
    expect(other.lancedb.ids).toEqual(['other']);
  });

  it('agentic: the loop answers on both with hits of the collection', async () => {
    const r = await both({
      queries: ['tell me about cycling'],
      messages: [{ role: 'user', content: 'tell me about cycling' }],
      pipeline: { agentic: true },
    });
    expect(r.qdrant.ids.length).toBeGreaterThan(0);
    expect(r.qdrant.ids).toContain('bikes');
    expect(r.lancedb.ids).toContain('bikes');
  });

  it('explain: per-stage reasons on both', async () => {
    for (const r of Object.values(engines)) {
      const res = await call(r, 'POST', '/search', {
        queries: [CODE_QUERY],
        collection_names: ['kb'],
        k: 3,
        explain: true,
      });
      expect(res.status).toBe(200);
      expect((res.json as { explanations: unknown[][] }).explanations[0]?.length).toBe(3);
    }
  });

  it('Dify /retrieval and MCP search_knowledge find the same record first', async () => {
    const firsts: unknown[] = [];
    for (const r of Object.values(engines)) {
      const dify = await call(r, 'POST', '/retrieval', {
        knowledge_id: 'kb',
        query: 'rye bread sourdough',
        retrieval_setting: { top_k: 3, score_threshold: 0 },
      });
      expect(dify.status, JSON.stringify(dify.json)).toBe(200);
      const records = (dify.json as { records: { content: string }[] }).records;
      expect(records[0]?.content).toContain('rye bread');
      const result = await r.mcp.callTool({ name: 'search_knowledge', arguments: { query: 'rye bread' } });
      const [content] = result.content as { type: string; text: string }[];
      const hits = (JSON.parse(content!.text) as { results: { text: string }[] }).results;
      firsts.push(hits[0]?.text);
    }
    expect(firsts[0]).toContain('rye bread');
    expect(firsts[1]).toEqual(firsts[0]);
  });

  it('eval: the same metrics on both', async () => {
    const metrics = [];
    for (const r of Object.values(engines)) {
      const res = await call(r, 'POST', '/api/v1/eval', {
        collection_names: ['kb'],
        queries: [
          { id: 'q1', text: 'rye bread sourdough' },
          { id: 'q2', text: CODE_QUERY },
        ],
        qrels: { q1: { bread: 1 }, q2: { pump: 1 } },
      });
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      metrics.push((res.json as { metrics: Record<string, number> }).metrics['ndcg@10']);
    }
    expect(metrics[1]).toBeCloseTo(metrics[0]!, 6);
  });

  it('re-ingest, kept versions, restore, chunks, listings and delete behave the same', async () => {
    const seen: unknown[] = [];
    for (const r of Object.values(engines)) {
      await put(r, 'bread', 'Rugbrød v2: now with caraway and more seeds.');
      const versions = await call(r, 'GET', '/api/v1/documents/bread/versions');
      expect(versions.status).toBe(200);
      const list = (versions.json as { versions: { version: string; live: boolean }[] }).versions;
      expect(list.map((v) => v.live)).toEqual([true, false]);
      expect(fileIds((await search(r, { queries: ['caraway seeds'] })).metadatas[0]!)[0]).toBe('bread');
      const restored = await call(
        r,
        'POST',
        `/api/v1/documents/bread/versions/${list[1]!.version}/restore`,
        {},
      );
      expect(restored.status, JSON.stringify(restored.json)).toBe(200);
      const top = await search(r, { queries: ['sourdough whole grains'], pipeline: { rerank: false } });
      expect(fileIds(top.metadatas[0]!)[0]).toBe('bread');
      const chunks = await call(r, 'GET', '/api/v1/documents/bread/chunks');
      expect(chunks.status).toBe(200);
      const cols = await call(r, 'GET', '/api/v1/collections');
      const docs1 = await call(r, 'GET', '/api/v1/collections/kb/documents?limit=2');
      const cursor = (docs1.json as { next_cursor: string | null }).next_cursor;
      expect(cursor).not.toBeNull();
      const docs2 = await call(
        r,
        'GET',
        `/api/v1/collections/kb/documents?limit=10&cursor=${encodeURIComponent(cursor!)}`,
      );
      const names = [
        ...(docs1.json as { documents: { file_id: string }[] }).documents,
        ...(docs2.json as { documents: { file_id: string }[] }).documents,
      ].map((d) => d.file_id);
      expect(new Set(names).size).toBe(names.length);
      const del = await call(r, 'DELETE', '/api/v1/documents/bread');
      expect(del.status).toBe(200);
      const after = await search(r, {
        queries: ['rye bread sourdough caraway'],
        pipeline: { rerank: false },
      });
      expect(fileIds(after.metadatas[0]!)).not.toContain('bread');
      seen.push({
        collections: (cols.json as { collections: { name: string; documents: number }[] }).collections
          .map((c) => [c.name, c.documents])
          .sort(),
        documents: names.sort(),
      });
    }
    expect(seen[1]).toEqual(seen[0]);
    expect(qdrant.violations).toEqual([]);
  });
});
