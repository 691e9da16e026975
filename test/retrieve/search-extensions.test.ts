import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RRF_K } from '../../src/index/rrf.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, startIngest, uploadFile } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/**
 * `POST /search` Kilde extensions over HTTP on LanceDB: `filter` (pushed into the index query,
 * injection strings matched literally), `explain` (explanations that add up to the returned order,
 * fused scores an independent RRF reproduces) and `pipeline` toggles within what is configured.
 */
const DOCS = [
  {
    id: 'flu',
    name: 'report-flu.md',
    type: 'report',
    text: '# Spanish flu\n\nThe Spanish flu of 1918 killed many in Denmark; influenza spread fast.',
  },
  {
    id: 'tax',
    name: 'report-tax.md',
    type: 'report',
    text: '# Taxes\n\nIncome tax in Denmark is high; municipal tax and state tax are paid on income.',
  },
  {
    id: 'bread',
    name: 'note-bread.md',
    type: 'note',
    text: '# Rye bread\n\nDanish rye bread is dark and dense, made with sourdough.',
  },
  {
    id: 'bikes',
    name: "note-x' OR 1=1 --.md",
    type: "note' OR '1'='1",
    text: '# Cycling\n\nBicycle lanes in Copenhagen are wide; cyclists ride all year in Denmark.',
  },
];

let embed: FakeEmbeddingsServer;
let rerank: FakeRerankServer;
let ingest: Harness;
const open: RetrieveHarness[] = [];

const put = (fileId: string, collection: string, name: string, type: string, text: string) =>
  uploadFile(
    ingest.app,
    { file_id: fileId, filename: name, collection_name: collection, collection_type: type, user_id: 'u1' },
    { name, content: text, type: 'text/markdown' },
  );

async function retrieve(env: Record<string, string> = {}) {
  const r = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '64',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    SMALL_COLLECTION_CHUNKS: '0',
    ...env,
  });
  open.push(r);
  return r;
}

const ids = (json: { metadatas: { file_id: string }[][] }) => json.metadatas[0]!.map((m) => m.file_id).sort();

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 64 });
  rerank = await startFakeRerankServer();
  ingest = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '64',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    CHUNK_SPLIT_BY: 'markdown',
  });
  for (const d of DOCS) await put(d.id, 'kb', d.name, d.type, d.text);
  // The same texts in another tenant: a filter never widens the tenant filter.
  for (const d of DOCS) await put(`other-${d.id}`, 'kb-other', d.name, d.type, d.text);
  await ingest.settle(); // the retrieval apps open their own index on the data directory
});

afterAll(async () => {
  for (const r of open) await r.close();
  await ingest?.close();
  await Promise.all([embed?.close(), rerank?.close()]);
});

describe('POST /search filter', () => {
  it('narrows the search inside the index, AND-ed with the collections, and still fills k', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const search = (filter: unknown, k = 10) =>
      r.search({ queries: ['Denmark'], collection_names: ['kb'], k, filter });
    expect(ids((await search({ file_ids: ['flu', 'bread', 'other-tax'] })).json)).toEqual(['bread', 'flu']);
    expect(ids((await search({ collection_types: ['report'] })).json)).toEqual(['flu', 'tax']);
    expect(ids((await search({ source_prefix: 'note-' })).json)).toEqual(['bikes', 'bread']);
    expect(ids((await search({ source_prefix: 'note-', collection_types: ['note'] })).json)).toEqual([
      'bread',
    ]);
    expect(ids((await search({ languages: ['EN'] })).json)).toHaveLength(4);
    expect(ids((await search({ created_after: '2020-01-01' })).json)).toEqual([]);
    // k = 1 under a filter that excludes the best hits: the one place is still filled.
    const one = await search({ file_ids: ['bread'] }, 1);
    expect(one.json.metadatas[0].map((m: { file_id: string }) => m.file_id)).toEqual(['bread']);
  });

  it('matches injection strings literally and refuses control characters clearly', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const search = (filter: unknown) =>
      r.search({ queries: ['Denmark'], collection_names: ['kb'], k: 10, filter });
    expect(ids((await search({ collection_types: ["note' OR '1'='1"] })).json)).toEqual(['bikes']);
    expect(ids((await search({ source_prefix: "note-x' OR 1=1" })).json)).toEqual(['bikes']);
    for (const evil of [
      "' OR 1=1 --",
      "report' OR 'a'='a",
      "a\\' OR 1=1",
      '") OR true --',
      '文档😀',
      '%',
      '_',
    ]) {
      const res = await search({ file_ids: [evil], collection_types: [evil] });
      expect(res.status, evil).toBe(200);
      expect(res.json.documents[0], evil).toEqual([]);
      expect((await search({ source_prefix: evil })).json.documents[0], evil).toEqual([]);
    }
    const nul = await search({ file_ids: ['flu\u0000'] });
    expect(nul.status).toBe(422);
    expect(nul.json).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(nul.json.detail).toMatch(/file_ids must not contain control characters/);
    const unknown = await search({ file_id: 'flu' });
    expect(unknown.status).toBe(422);
    expect(unknown.json.detail).toMatch(/file_id/);
    const badDate = await search({ created_after: 'last tuesday' });
    expect(badDate.status).toBe(422);
    expect(badDate.json.detail).toMatch(/created_after must be an ISO 8601 date/);
    const empty = await search({ file_ids: [] });
    expect(empty.status).toBe(422);
  });
});

describe('POST /search explain', () => {
  it('is off by default: the answer is byte for byte the reference one', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const body = { queries: ['rye bread', 'income tax'], collection_names: ['kb'], k: 3 };
    const text = async (b: unknown) =>
      (
        await fetch(`${r.url}/search`, {
          method: 'POST',
          headers: { ...AUTH, 'content-type': 'application/json' },
          body: JSON.stringify(b),
        })
      ).text();
    const plain = await text(body);
    expect(await text({ ...body, explain: false })).toBe(plain);
    expect(Object.keys(JSON.parse(plain))).toEqual(['documents', 'metadatas', 'distances']);
  });

  it('explains hybrid hits: the order by score, and fused scores an independent RRF reproduces', async () => {
    // One list per query, each explained on its own.
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true', MERGE_QUERY_RESULTS: 'false' });
    const { status, json } = await r.search({
      queries: ['Spanish flu Denmark', 'rye bread sourdough'],
      collection_names: ['kb'],
      k: 4,
      explain: true,
    });
    expect(status).toBe(200);
    expect(json.explanations).toHaveLength(2);
    for (let q = 0; q < 2; q++) {
      const ex = json.explanations[q];
      expect(ex).toHaveLength(json.documents[q].length);
      expect(ex.map((e: { score: number }) => e.score)).toEqual(json.distances[q]);
      // Sorting by the explained score reproduces the returned order.
      const order = ex.map((_: unknown, i: number) => i);
      const sorted = [...order].sort((a: number, b: number) => ex[b].score - ex[a].score);
      expect(sorted).toEqual(order);
      for (const e of ex) {
        expect(e.path).toBe('hybrid');
        expect(e.rerank).toBeNull();
        // LanceDB fuses in the adapter: (k + 1) / lists × Σ 1 / (k + rank), k = 60, over 2 lists.
        const branches: ({ rank: number } | null)[] = [e.dense, e.lexical];
        let rrf = 0;
        for (const b of branches) if (b) rrf += 1 / (RRF_K + b.rank);
        expect(e.fused).toBeCloseTo(((RRF_K + 1) / 2) * rrf, 12);
        expect(e.score).toBe(e.fused);
      }
      expect(ex[0].dense.rank).toBeGreaterThanOrEqual(1);
    }
    expect(json.metadatas[0][0].file_id).toBe('flu');
    expect(json.explanations[0][0].lexical).toMatchObject({ rank: 1 });
    expect(json.timings_ms.total).toBeGreaterThanOrEqual(0);
    for (const stage of ['queries', 'embed', 'search'])
      expect(json.timings_ms[stage]).toBeGreaterThanOrEqual(0);
  });

  it('explains dense and reranked hits, and a rerank toggle switched off', async () => {
    const r = await retrieve({ ENABLE_RERANKING: 'true', RERANK_API_BASE_URL: rerank.url });
    const { json } = await r.search({
      queries: ['rye bread'],
      collection_names: ['kb'],
      k: 2,
      explain: true,
    });
    for (const e of json.explanations[0]) {
      expect(e.path).toBe('rerank');
      expect(e.dense.rank).toBeGreaterThanOrEqual(1);
      expect(e.lexical).toBeNull();
      expect(e.fused).toBeNull();
      expect(e.rerank).toBe(e.score);
    }
    expect(json.explanations[0][0].score).toBe(1);
    expect(json.timings_ms.rerank).toBeGreaterThanOrEqual(0);
    const off = await r.search({
      queries: ['rye bread'],
      collection_names: ['kb'],
      k: 2,
      explain: true,
      pipeline: { rerank: false },
    });
    expect(off.json.explanations[0].map((e: { path: string }) => e.path)).toEqual(['dense', 'dense']);
    expect(off.json.explanations[0].map((e: { dense: { rank: number } }) => e.dense.rank)).toEqual([1, 2]);
    expect(off.json.explanations[0][0].score).toBe(off.json.explanations[0][0].dense.score);
  });
});

describe('POST /search pipeline', () => {
  it('chooses among the configured modes and refuses the others with 400', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const ask = (pipeline: unknown) =>
      r.search({ queries: ['Denmark'], collection_names: ['kb'], k: 3, explain: true, pipeline });
    const dense = await ask({ hybrid: false });
    expect(dense.json.explanations[0].map((e: { path: string }) => e.path)).toEqual([
      'dense',
      'dense',
      'dense',
    ]);
    expect((await ask({ hybrid: true })).json.explanations[0][0].path).toBe('hybrid');
    for (const [pipeline, message] of [
      [{ rerank: true }, /pipeline.rerank is not configured/],
      [{ agentic: true }, /pipeline.agentic is not configured/],
    ] as const) {
      const res = await ask(pipeline);
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ code: 'INVALID_REQUEST' });
      expect(res.json.detail).toMatch(message);
    }
    const plain = await retrieve();
    const refused = await plain.search({
      queries: ['x'],
      collection_names: ['kb'],
      pipeline: { hybrid: true },
    });
    expect(refused.status).toBe(400);
    expect(
      (await plain.search({ queries: ['x'], collection_names: ['kb'], pipeline: { hybrid: false } })).status,
    ).toBe(200);
  });
});
