import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, startIngest, uploadFile } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/** A small labelled corpus: each query has one document that answers it. */
const DOCS: Record<string, string> = {
  bikes:
    '# Cycling\n\nBicycle lanes in Copenhagen are wide. Cyclists ride on separate bicycle paths all year.',
  flu: '# Spanish flu\n\nThe Spanish flu pandemic of 1918 killed millions; in Denmark about 15000 people died of influenza.',
  tax: '# Taxes\n\nIncome tax in Denmark is high. The municipal tax and the state tax are paid on income.',
  bread: '# Rye bread\n\nDanish rye bread (rugbrød) is dark, dense and made with sourdough and whole grains.',
};

let embed: FakeEmbeddingsServer;
let ingest: Harness;
const open: RetrieveHarness[] = [];

const put = (fileId: string, collection: string, text: string) =>
  uploadFile(
    ingest.app,
    { file_id: fileId, filename: `${fileId}.md`, collection_name: collection, user_id: 'u1' },
    { name: `${fileId}.md`, content: text, type: 'text/markdown' },
  );

async function retrieve(env: Record<string, string> = {}) {
  const r = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '128',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ...env,
  });
  open.push(r);
  return r;
}

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 128 });
  ingest = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '128',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    CHUNK_SPLIT_BY: 'markdown',
  });
  for (const [id, text] of Object.entries(DOCS)) await put(id, 'kb-main', text);
  // The same text in another tenant's collection must never leak into kb-main's results.
  await put('flu-copy', 'kb-other', DOCS.flu!);
  await put('secret', 'kb-other', '# Secret\n\nThe secret plan mentions the Spanish flu of 1918 in Denmark.');
  // The retrieval apps below open their own index on the data directory.
  await ingest.settle();
});

afterAll(async () => {
  for (const r of open) await r.close();
  await ingest.close();
  await embed.close();
});

describe('POST /search (dense)', () => {
  it('answers one list per query, parallel and of equal length, best first, scores in [0, 1]', async () => {
    // The contract's shape; the default fuses the lists into one for Open WebUI (below).
    const r = await retrieve({ MERGE_QUERY_RESULTS: 'false' });
    const { status, json } = await r.search({
      queries: ['Spanish flu deaths in Denmark', 'rye bread sourdough'],
      collection_names: ['kb-main'],
      k: 3,
    });
    expect(status).toBe(200);
    expect(json.documents).toHaveLength(2);
    for (const key of ['metadatas', 'distances']) expect(json[key]).toHaveLength(2);
    for (let q = 0; q < 2; q++) {
      expect(json.documents[q]).toHaveLength(3);
      expect(json.metadatas[q]).toHaveLength(3);
      expect(json.distances[q]).toHaveLength(3);
      const d: number[] = json.distances[q];
      for (const s of d) expect(s).toBeGreaterThanOrEqual(0);
      for (const s of d) expect(s).toBeLessThanOrEqual(1);
      expect([...d].sort((a, b) => b - a)).toEqual(d);
    }
    expect(json.metadatas[0][0].file_id).toBe('flu');
    expect(json.metadatas[1][0].file_id).toBe('bread');
    expect(json.metadatas[0][0]).toMatchObject({
      collection_name: 'kb-main',
      name: 'flu.md',
      headers: ['Spanish flu'],
    });
  });

  it('never returns another collection, even for identical text', async () => {
    const r = await retrieve();
    const { json } = await r.search({
      queries: ['Spanish flu 1918 Denmark secret plan'],
      collection_names: ['kb-main'],
      k: 10,
    });
    const collections = new Set(json.metadatas[0].map((m: { collection_name: string }) => m.collection_name));
    expect([...collections]).toEqual(['kb-main']);
    expect(json.metadatas[0].map((m: { file_id: string }) => m.file_id)).not.toContain('flu-copy');
    const both = await r.search({
      queries: ['secret plan'],
      collection_names: ['kb-main', 'kb-other'],
      k: 10,
    });
    expect(both.json.metadatas[0][0].file_id).toBe('secret');
  });

  it('answers the //search path the chat platform builds from a trailing-slash base URL', async () => {
    const r = await retrieve();
    const { status, json } = await r.search(
      { queries: ['tax'], collection_names: ['kb-main'] },
      AUTH,
      '//search',
    );
    expect(status).toBe(200);
    expect(json.metadatas[0][0].file_id).toBe('tax');
  });

  it('deduplicates identical content', async () => {
    const r = await retrieve();
    const { json } = await r.search({
      queries: ['Spanish flu'],
      collection_names: ['kb-main', 'kb-other'],
      k: 10,
    });
    const docs: string[] = json.documents[0];
    expect(new Set(docs).size).toBe(docs.length);
  });

  it('fuses every query into one list by default (MERGE_QUERY_RESULTS: Open WebUI reads only the first)', async () => {
    const r = await retrieve();
    const { json } = await r.search({
      queries: ['Spanish flu', 'rye bread'],
      collection_names: ['kb-main'],
      k: 4,
    });
    expect(json.documents).toHaveLength(1);
    const ids = json.metadatas[0].map((m: { file_id: string }) => m.file_id);
    expect(ids.slice(0, 2).sort()).toEqual(['bread', 'flu']);
  });
});

describe("POST /search from Open WebUI's turns", () => {
  it('answers an image-only turn (`queries: [""]`, a user message with no text) 200 with no hits', async () => {
    const r = await retrieve();
    const empty = { documents: [[]], metadatas: [[]], distances: [[]] };
    const query = await r.search({ queries: [''], collection_names: ['kb-main'], k: 5 });
    expect(query).toMatchObject({ status: 200, json: empty });
    const image = await r.search({
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }],
        },
      ],
      collection_names: ['kb-main'],
    });
    expect(image).toMatchObject({ status: 200, json: empty });
  });

  it('answers `k: 0` and `k: null` with the default number of hits', async () => {
    const r = await retrieve();
    const body = { queries: ['Spanish flu'], collection_names: ['kb-main'] };
    const unset = await r.search(body);
    expect(unset.json.documents[0].length).toBeGreaterThan(1);
    for (const k of [0, null]) {
      const res = await r.search({ ...body, k });
      expect(res.status).toBe(200);
      expect(res.json.documents).toEqual(unset.json.documents);
    }
  });
});

describe('POST /search (hybrid and lexical on LanceDB)', () => {
  it('fuses dense and full-text server-side, RRF scores divided by their maximum (in [0, 1])', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const { json } = await r.search({ queries: ['rugbrød sourdough'], collection_names: ['kb-main'], k: 3 });
    expect(json.metadatas[0][0].file_id).toBe('bread');
    const scores = json.distances[0] as number[];
    for (const s of scores) expect(s).toBeLessThanOrEqual(1);
    // First in both lists: the largest score there is.
    expect(scores[0]).toBeCloseTo(1, 12);
  });

  it('searches BM25 alone in lexical-only mode', async () => {
    const r = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
    open.push(r);
    const { json } = await r.search({
      queries: ['bicycle lanes Copenhagen'],
      collection_names: ['kb-main'],
      k: 2,
    });
    expect(json.metadatas[0][0].file_id).toBe('bikes');
    expect(r.logs.text()).toMatch(/lexical-only search/);
  });
});

describe('reranking', () => {
  let rerank: FakeRerankServer;
  beforeAll(async () => {
    rerank = await startFakeRerankServer();
  });
  afterAll(() => rerank.close());

  it('rescores k × multiplier candidates down to k with the reranker scores', async () => {
    const r = await retrieve({
      ENABLE_RERANKING: 'true',
      RERANK_API_BASE_URL: rerank.url,
      RERANK_MODEL: 'rr',
      INITIAL_RETRIEVAL_MULTIPLIER: '3',
    });
    rerank.mode = { kind: 'ok' };
    const { json } = await r.search({ queries: ['income tax'], collection_names: ['kb-main'], k: 1 });
    const sent = rerank.requests.at(-1)!.json as {
      query: string;
      documents: string[];
      top_n: number;
      model: string;
    };
    expect(sent.model).toBe('rr');
    expect(sent.query).toBe('income tax');
    expect(sent.documents.length).toBe(3);
    expect(sent.top_n).toBe(1);
    expect(json.documents[0]).toHaveLength(1);
    expect(json.metadatas[0][0].file_id).toBe('tax');
    expect(json.distances[0][0]).toBe(1);
  });

  it('returns the unranked candidates when the reranker fails', async () => {
    const r = await retrieve({
      ENABLE_RERANKING: 'true',
      RERANK_API_BASE_URL: rerank.url,
      RERANK_TIMEOUT: '1',
    });
    rerank.mode = { kind: 'status', status: 500 };
    const { status, json } = await r.search({ queries: ['income tax'], collection_names: ['kb-main'], k: 2 });
    expect(status).toBe(200);
    expect(json.documents[0]).toHaveLength(2);
    expect(json.metadatas[0][0].file_id).toBe('tax');
    expect(r.logs.text()).toMatch(/rerank failed/);
    const metrics = await r.app.inject({ url: '/metrics', headers: AUTH });
    expect(metrics.body).toMatch(/retrieve_fallbacks_total\{kind="rerank"\} 1/);
    rerank.mode = { kind: 'ok' };
  });
});

describe('query generation', () => {
  let chat: FakeChatServer;
  beforeAll(async () => {
    chat = await startFakeChatServer();
  });
  afterAll(() => chat.close());

  const messages = [
    { role: 'user', content: 'What bread do Danes eat?' },
    { role: 'assistant', content: 'Mostly rye bread.' },
    { role: 'user', content: 'And how did the 1918 pandemic hit them?' },
  ];

  it('searches the queries the LLM generates from the messages', async () => {
    const r = await retrieve({ ENABLE_QUERY_GENERATION: 'true', AGENT_API_BASE_URL: chat.baseUrl });
    chat.mode = { kind: 'ok', reply: () => '{"queries": ["Spanish flu 1918 Denmark deaths"]}' };
    const { json } = await r.search({ messages, collection_names: ['kb-main'], k: 1 });
    expect(json.metadatas[0][0].file_id).toBe('flu');
    expect(chat.requests.at(-1)!.path).toBe('/v1/chat/completions');
  });

  it('falls back to the last user message when the LLM fails', async () => {
    const r = await retrieve({ ENABLE_QUERY_GENERATION: 'true', AGENT_API_BASE_URL: chat.baseUrl });
    chat.mode = { kind: 'status', status: 500 };
    const { status, json } = await r.search({ messages, collection_names: ['kb-main'], k: 1 });
    expect(status).toBe(200);
    expect(json.documents).toHaveLength(1);
    const metrics = await r.app.inject({ url: '/metrics', headers: AUTH });
    expect(metrics.body).toMatch(/retrieve_fallbacks_total\{kind="query_generation"\} 1/);
    expect(metrics.body).toMatch(/retrieve_stage_duration_seconds_count\{stage="embed"\}/);
  });
});

describe('validation and auth', () => {
  let r: RetrieveHarness;
  beforeAll(async () => {
    r = await retrieve();
  });

  it.each([
    ['no query and no messages', { collection_names: ['kb-main'] }],
    ['no query at all', { queries: [], collection_names: ['kb-main'] }],
    ['no collections', { queries: ['x'], collection_names: [] }],
    ['a bad collection name', { queries: ['x'], collection_names: ['kb/main'] }],
    ['a negative k', { queries: ['x'], collection_names: ['a'], k: -1 }],
  ])('rejects %s with 422', async (_name, body) => {
    const { status, json } = await r.search(body);
    expect(status).toBe(422);
    expect(json.code).toBe('INVALID_REQUEST');
  });

  it('requires the bearer key', async () => {
    const { status, json } = await r.search({ queries: ['x'], collection_names: ['kb-main'] }, {});
    expect(status).toBe(401);
    expect(json).toEqual({ detail: 'Invalid API key' });
  });

  it('answers an unknown collection with empty lists, not an error', async () => {
    // The two queries' lists fused into one (MERGE_QUERY_RESULTS, on by default).
    const { status, json } = await r.search({ queries: ['x', 'y'], collection_names: ['nobody'] });
    expect(status).toBe(200);
    expect(json).toEqual({ documents: [[]], metadatas: [[]], distances: [[]] });
  });

  it('is ready when the index answers', async () => {
    const res = await r.app.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(200);
  });
});
