import { createServer } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LexicalAnalyzer } from '../../src/embed/bm25/analysis.js';
import { DENSE_VECTOR, SPARSE_VECTOR } from '../../src/index/contract.js';
import { openIndex } from '../../src/index/open.js';
import { RRF_K } from '../../src/index/rrf.js';
import { createCorpusCache } from '../../src/retrieve/corpus-cache.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, type QdrantFakeRequest, startQdrantFake } from '../fakes/qdrant-server.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { CODE_QUERY, fileIds, ingestLabelled, ingestText, LABELLED, ONE_CHUNK } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/**
 * Retrieval against Qdrant (the schema-validating fake): client-side BM25 fusion when the
 * collection has no `text-sparse`, the server-side Query API otherwise, and the start-up checks.
 * `plain` is ingested with ENABLE_SPARSE_EMBEDDINGS=false, `sparse` with it on.
 */
let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
const ingests: Harness[] = [];
const open: RetrieveHarness[] = [];

const DIM = 64;
const denseEnv = {
  EMBEDDING_PROVIDER: 'http-compat',
  EMBEDDING_MODEL: 'hash',
  EMBEDDING_DIM: String(DIM),
};

async function retrieve(env: Record<string, string>) {
  const r = await startRetrieve({
    VECTORDB_URI: qdrant.url,
    ...denseEnv,
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ...env,
  });
  open.push(r);
  return r;
}

/** The requests the fake received while `fn` ran. */
async function during<T>(fn: () => Promise<T>): Promise<{ result: T; calls: QdrantFakeRequest[] }> {
  const mark = qdrant.requests.length;
  const result = await fn();
  return { result, calls: qdrant.requests.slice(mark) };
}
const ofOp = (calls: QdrantFakeRequest[], op: string) => calls.filter((c) => c.operationId === op);

const warnings = (r: RetrieveHarness) => r.logs.lines.filter((l) => l.level === 40).map((l) => String(l.msg));

beforeAll(async () => {
  qdrant = await startQdrantFake();
  embed = await startFakeOpenAIEmbeddings({ dim: DIM });
  for (const [index, sparse] of [
    ['plain', 'false'],
    ['sparse', 'true'],
  ] as const) {
    const h = await startIngest({
      VECTORDB_URI: qdrant.url,
      VECTORDB_INDEX: index,
      ENABLE_SPARSE_EMBEDDINGS: sparse,
      ...denseEnv,
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      ...ONE_CHUNK,
    });
    ingests.push(h);
    await ingestLabelled(h, 'kb');
    // Another tenant holds the same relevant text: it must never leak into kb's results.
    await ingestText(h, 'pump-copy', 'kb-other', LABELLED.pump!);
  }
});

afterAll(async () => {
  for (const r of open) await r.close();
  for (const h of ingests) await h.close();
  await Promise.all([qdrant?.close(), embed?.close()]);
});

describe('hybrid on a collection without text-sparse: dense + client-side BM25', () => {
  it('fuses the dense ranking with BM25 over the scrolled tenant corpus (RRF), which reorders', async () => {
    const dense = await retrieve({ VECTORDB_INDEX: 'plain' });
    const d = await dense.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 });
    const denseOrder = fileIds(d.json.metadatas[0]);
    // Dense alone: the stop-word decoy wins, the relevant chunk trails it.
    expect(denseOrder[0]).toBe('decoy');
    const pumpDenseRank = denseOrder.indexOf('pump') + 1;
    expect(pumpDenseRank).toBeGreaterThan(1);

    const hybrid = await retrieve({ VECTORDB_INDEX: 'plain', ENABLE_HYBRID_SEARCH: 'true' });
    const { result, calls } = await during(() =>
      hybrid.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 }),
    );
    expect(result.status).toBe(200);
    const order = fileIds(result.json.metadatas[0]);
    expect(order.slice(0, 2)).toEqual(['pump', 'decoy']);
    // RRF over two lists, divided by its maximum 2 / (k + 1): pump is first lexically and
    // `pumpDenseRank` densely; the decoy has no lexical match.
    const [pumpScore, decoyScore] = result.json.distances[0] as number[];
    const max = 2 / (RRF_K + 1);
    expect(pumpScore).toBeCloseTo((1 / (RRF_K + 1) + 1 / (RRF_K + pumpDenseRank)) / max, 12);
    expect(decoyScore).toBeCloseTo(1 / (RRF_K + 1) / max, 12);
    expect(
      new Set(result.json.metadatas[0].map((m: { collection_name: string }) => m.collection_name)),
    ).toEqual(new Set(['kb']));

    // The mode on the wire: a dense query, the tenant's corpus scrolled, never a sparse query.
    const queries = ofOp(calls, 'query_points');
    expect(queries).toHaveLength(1);
    expect(queries[0]!.body).toMatchObject({ using: DENSE_VECTOR });
    expect(JSON.stringify(queries[0]!.body)).not.toContain(SPARSE_VECTOR);
    const scrolls = ofOp(calls, 'scroll_points');
    expect(scrolls.length).toBeGreaterThan(0);
    for (const s of scrolls) {
      expect(s.path).toBe('/collections/plain/points/scroll');
      expect(s.body).toMatchObject({
        filter: { must: [{ key: 'meta.collection_name', match: { any: ['kb'] } }] },
        with_vector: false,
      });
    }
    expect(warnings(hybrid).join('\n')).toMatch(
      /ENABLE_HYBRID_SEARCH=true but collection "plain" has no sparse/,
    );
  });

  it('reuses the scrolled corpus within the TTL and re-scrolls with a TTL of 0', async () => {
    const cached = await retrieve({ VECTORDB_INDEX: 'plain', ENABLE_HYBRID_SEARCH: 'true' });
    const body = { queries: [CODE_QUERY], collection_names: ['kb'], k: 3 };
    const first = await during(() => cached.search(body));
    expect(ofOp(first.calls, 'scroll_points').length).toBeGreaterThan(0);
    const second = await during(() => cached.search(body));
    expect(ofOp(second.calls, 'scroll_points')).toHaveLength(0);
    expect(second.result.json).toEqual(first.result.json);
    // Another collection set is another corpus.
    const other = await during(() => cached.search({ ...body, collection_names: ['kb', 'kb-other'] }));
    expect(ofOp(other.calls, 'scroll_points').length).toBeGreaterThan(0);

    const uncached = await retrieve({
      VECTORDB_INDEX: 'plain',
      ENABLE_HYBRID_SEARCH: 'true',
      BM25_FUSION_CACHE_TTL: '0',
    });
    for (let i = 0; i < 2; i++) {
      const { calls } = await during(() => uncached.search(body));
      expect(ofOp(calls, 'scroll_points').length).toBeGreaterThan(0);
    }
  });

  it('expires a corpus exactly at the TTL (injected clock)', async () => {
    const index = await openIndex(
      { uri: qdrant.url, collection: 'plain', denseDim: DIM, sparse: false, timeoutMs: 5000 },
      { log: pino({ level: 'silent' }) },
    );
    let t = 1_000;
    const cache = createCorpusCache({
      index,
      analyzer: new LexicalAnalyzer('english'),
      maxDocs: 100,
      ttlMs: 60_000,
      now: () => t,
    });
    const scrollsDuring = async (fn: () => Promise<unknown>) =>
      ofOp((await during(fn)).calls, 'scroll_points');
    expect(await scrollsDuring(() => cache.get(['kb']))).toHaveLength(1);
    t += 59_999;
    expect(await scrollsDuring(() => cache.get(['kb']))).toHaveLength(0);
    t += 1;
    expect(await scrollsDuring(() => cache.get(['kb']))).toHaveLength(1);
    expect((await cache.get(['kb'])).corpus.size).toBe(Object.keys(LABELLED).length);
  });

  it('holds at most maxEntries corpora, evicting the least recently used', async () => {
    const index = await openIndex(
      { uri: qdrant.url, collection: 'plain', denseDim: DIM, sparse: false, timeoutMs: 5000 },
      { log: pino({ level: 'silent' }) },
    );
    const cache = createCorpusCache({
      index,
      analyzer: new LexicalAnalyzer('english'),
      maxDocs: 100,
      ttlMs: 60_000,
      maxEntries: 2,
    });
    const scrolls = async (names: string[]) =>
      ofOp((await during(() => cache.get(names))).calls, 'scroll_points');
    expect(await scrolls(['kb'])).toHaveLength(1);
    expect(await scrolls(['other'])).toHaveLength(1);
    expect(await scrolls(['kb'])).toHaveLength(0); // kb is now the most recent
    expect(await scrolls(['kb', 'other'])).toHaveLength(1); // evicts "other"
    expect(await scrolls(['kb'])).toHaveLength(0);
    expect(await scrolls(['other'])).toHaveLength(1);
  });

  it('caps the scrolled corpus at BM25_FUSION_MAX_DOCS and says so', async () => {
    const r = await retrieve({
      VECTORDB_INDEX: 'plain',
      ENABLE_HYBRID_SEARCH: 'true',
      BM25_FUSION_MAX_DOCS: '2',
    });
    const { calls, result } = await during(() =>
      r.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 }),
    );
    expect(result.status).toBe(200);
    const limits = ofOp(calls, 'scroll_points').map((c) => (c.body as { limit: number }).limit);
    expect(limits.reduce((a, b) => a + b, 0)).toBe(2);
    expect(warnings(r).join('\n')).toMatch(/client-side BM25 corpus capped at BM25_FUSION_MAX_DOCS/);

    const index = await openIndex(
      { uri: qdrant.url, collection: 'plain', denseDim: DIM, sparse: false, timeoutMs: 5000 },
      { log: pino({ level: 'silent' }) },
    );
    const capped = await createCorpusCache({
      index,
      analyzer: new LexicalAnalyzer('english'),
      maxDocs: 3,
      ttlMs: 0,
    }).get(['kb']);
    expect(capped.corpus.size).toBe(3);
    expect(capped.truncated).toBe(true);
  });

  it('searches the scrolled corpus alone in lexical-only mode', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'plain', EMBEDDING_PROVIDER: 'none' });
    const { result, calls } = await during(() =>
      r.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 }),
    );
    expect(fileIds(result.json.metadatas[0])).toEqual(['pump']);
    expect(ofOp(calls, 'query_points')).toHaveLength(0);
    expect(ofOp(calls, 'scroll_points').length).toBeGreaterThan(0);
  });
});

describe('a collection with text-sparse: the Query API does the work', () => {
  it('hybrid is one query call with dense and sparse prefetches fused by RRF', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'sparse', ENABLE_HYBRID_SEARCH: 'true' });
    const { result, calls } = await during(() =>
      r.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 3 }),
    );
    expect(fileIds(result.json.metadatas[0])[0]).toBe('pump');
    expect(ofOp(calls, 'scroll_points')).toHaveLength(0);
    const queries = ofOp(calls, 'query_points');
    expect(queries).toHaveLength(1);
    const body = queries[0]!.body as { prefetch: { using: string; filter: unknown }[]; query: unknown };
    expect(body.query).toEqual({ fusion: 'rrf' });
    expect(body.prefetch.map((p) => p.using)).toEqual([DENSE_VECTOR, SPARSE_VECTOR]);
    for (const p of body.prefetch) {
      expect(p.filter).toEqual({ must: [{ key: 'meta.collection_name', match: { any: ['kb'] } }] });
    }
    expect(warnings(r).join('\n')).not.toMatch(/no sparse/);
  });

  it('lexical-only is one sparse query on text-sparse', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'sparse', EMBEDDING_PROVIDER: 'none' });
    const { result, calls } = await during(() =>
      r.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 }),
    );
    expect(fileIds(result.json.metadatas[0])).toEqual(['pump']);
    const queries = ofOp(calls, 'query_points');
    expect(queries).toHaveLength(1);
    expect(queries[0]!.body).toMatchObject({ using: SPARSE_VECTOR });
    expect(ofOp(calls, 'scroll_points')).toHaveLength(0);
  });
});

describe('start-up settings check and readiness', () => {
  it('warns when the collection is missing, and is not ready', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'nope' });
    expect(warnings(r).join('\n')).toMatch(/collection "nope" does not exist yet/);
    const ready = await r.app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().detail).toMatch(/^index: .*"nope" does not exist/);
    // Searching before anything is ingested answers empty lists (the two fused into one: MERGE_QUERY_RESULTS).
    const { status, json } = await r.search({ queries: ['a', 'b'], collection_names: ['kb'] });
    expect(status).toBe(200);
    expect(json).toEqual({ documents: [[]], metadatas: [[]], distances: [[]] });
  });

  it('a dense size mismatch: warned, and /health/ready 503 naming it and the fix', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'plain', EMBEDDING_DIM: '32' });
    const line = r.logs.lines.find((l) => l.check === 'index-settings' && l.level === 40);
    expect(line?.msg).toMatch(
      `collection "plain" stores ${DENSE_VECTOR} of size ${DIM} but EMBEDDING_DIM=32: every search would fail; set EMBEDDING_DIM=${DIM}`,
    );
    const ready = await fetch(`${r.url}/health/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { detail: string }).detail).toMatch(
      /^index: .*EMBEDDING_DIM=32: every search would fail/,
    );
  });

  it('names the vectors it found when text-dense is missing', async () => {
    // A collection another tool created, with its own vector names.
    const res = await fetch(`${qdrant.url}/collections/foreign`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vectors: { dense: { size: DIM, distance: 'Cosine' } } }),
    });
    expect(res.status).toBe(200);
    const r = await retrieve({ VECTORDB_INDEX: 'foreign' });
    expect(warnings(r)).toContain(
      `collection "foreign" has no "${DENSE_VECTOR}" vector (it has: "dense") but EMBEDDING_PROVIDER=http-compat: every search would fail; set EMBEDDING_PROVIDER=none, or point VECTORDB_INDEX at a collection ingested with dense vectors (readiness answers 503 until fixed)`,
    );
    expect((await fetch(`${r.url}/health/ready`)).status).toBe(503);
  });

  it('is quiet when the settings match', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'sparse', ENABLE_HYBRID_SEARCH: 'true' });
    expect(r.logs.lines.filter((l) => l.check === 'index-settings')).toEqual([]);
    expect((await r.app.inject({ url: '/health/ready' })).statusCode).toBe(200);
  });

  it('answers /health/ready 503 with the probe detail when Qdrant is unreachable', async () => {
    const port = await closedPort();
    const r = await retrieve({ VECTORDB_URI: `http://127.0.0.1:${port}`, VECTORDB_INDEX: 'plain' });
    expect(warnings(r).join('\n')).toMatch(/cannot inspect collection "plain"/);
    const ready = await r.app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ status: 'error' });
    expect(ready.json().detail).toMatch(/^index: .*ECONNREFUSED/);
    expect((await r.app.inject({ url: '/health' })).statusCode).toBe(200);
    // A search the index cannot answer says which dependency failed (a live cluster with a node
    // down answered 502 SEARCH_FAILED before).
    const search = await r.search({ queries: ['pump'], collection_names: ['kb'], k: 3 });
    expect(search.status).toBe(503);
    expect(search.json).toEqual({ detail: 'Vector index unavailable', code: 'VECTORDB_FAILED' });
  });

  it('sent Qdrant nothing off its published schema', () => {
    expect(qdrant.violations).toEqual([]);
  });
});

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('Kilde extensions on Qdrant: filter and explain on the wire', () => {
  const rank = (e: { rank: number } | null) => (e ? e.rank : undefined);

  it('explains server-side hybrid hits: ranks from the branches, fused = Qdrant RRF 1 / (rank + 1)', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'sparse', ENABLE_HYBRID_SEARCH: 'true' });
    const body = { queries: [CODE_QUERY], collection_names: ['kb'], k: 4 };
    const plain = await r.search(body);
    const { result, calls } = await during(() => r.search({ ...body, explain: true }));
    // Explaining changes nothing of the answer itself.
    expect(result.json.documents).toEqual(plain.json.documents);
    expect(result.json.distances).toEqual(plain.json.distances);
    const ex = result.json.explanations[0] as {
      path: string;
      dense: { rank: number; score: number } | null;
      lexical: { rank: number; score: number } | null;
      fused: number;
      score: number;
    }[];
    expect(ex.map((e) => e.score)).toEqual(result.json.distances[0]);
    expect([...ex].sort((a, b) => b.score - a.score)).toEqual(ex);
    for (const e of ex) {
      expect(e.path).toBe('hybrid');
      // Qdrant's RRF: 1 / (0-based position + 2) per prefetch, divided by its maximum 2 / 2.
      let rrf = 0;
      // Summed in f32, as Qdrant does (1/2 + 1/3 comes back as 0.8333334).
      for (const b of [e.dense, e.lexical]) if (b) rrf = Math.fround(rrf + Math.fround(1 / (b.rank + 1)));
      expect(Math.fround(e.fused)).toBe(Math.min(1, rrf));
      expect(e.score).toBe(e.fused);
    }
    expect(result.json.metadatas[0][0].file_id).toBe('pump');
    expect(rank(ex[0]!.lexical)).toBe(1);
    // On the wire: the fused query, and each branch read again with the prefetch's limit and filter.
    const queries = ofOp(calls, 'query_points').map((c) => c.body as Record<string, unknown>);
    expect(queries).toHaveLength(3);
    const fusedQuery = queries.find((q) => 'prefetch' in q)!;
    const branches = queries.filter((q) => !('prefetch' in q));
    expect(branches.map((q) => q.using).sort()).toEqual([DENSE_VECTOR, SPARSE_VECTOR]);
    for (const b of branches) {
      expect(b.limit).toBe((fusedQuery.prefetch as { limit: number }[])[0]!.limit);
      expect(b.filter).toEqual(
        fusedQuery.filter ?? (fusedQuery.prefetch as { filter: unknown }[])[0]!.filter,
      );
    }
  });

  it('explains client-side BM25 fusion with the RRF of the fused lists', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'plain', ENABLE_HYBRID_SEARCH: 'true' });
    const { json } = await r.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5, explain: true });
    for (const e of json.explanations[0]) {
      let rrf = 0;
      for (const b of [e.dense, e.lexical]) if (b) rrf += 1 / (RRF_K + b.rank);
      expect(e.fused).toBeCloseTo(((RRF_K + 1) / 2) * rrf, 12);
    }
    expect(json.explanations[0][0]).toMatchObject({ path: 'hybrid', lexical: { rank: 1 } });
  });

  it('pushes the filter into every Qdrant request; a source prefix becomes file ids', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'sparse', ENABLE_HYBRID_SEARCH: 'true' });
    const ids = await during(() =>
      r.search({
        queries: [CODE_QUERY],
        collection_names: ['kb'],
        k: 5,
        filter: { file_ids: ['bread', 'tax'] },
      }),
    );
    expect(new Set(fileIds(ids.result.json.metadatas[0]))).toEqual(new Set(['bread', 'tax']));
    const [fused] = ofOp(ids.calls, 'query_points');
    expect(JSON.stringify(fused!.body)).toContain(
      JSON.stringify({ key: 'meta.file_id', match: { any: ['bread', 'tax'] } }),
    );
    const prefix = await during(() =>
      r.search({
        queries: ['bread'],
        collection_names: ['kb', 'kb-other'],
        k: 5,
        filter: { source_prefix: 'pu' },
      }),
    );
    // pump.txt (kb) and pump-copy.txt (kb-other) start with "pu"; their one content is answered once.
    const found = fileIds(prefix.result.json.metadatas[0]);
    expect(found).toHaveLength(1);
    expect(['pump', 'pump-copy']).toContain(found[0]);
    const [scan] = ofOp(prefix.calls, 'scroll_points');
    expect(scan!.body).toMatchObject({
      filter: {
        must: [
          { key: 'meta.collection_name', match: { any: ['kb', 'kb-other'] } },
          { key: 'meta.split_id', match: { value: 0 } },
        ],
      },
      with_payload: { include: ['meta.file_id', 'meta.source'] },
    });
    for (const q of ofOp(prefix.calls, 'query_points')) {
      expect(JSON.stringify(q.body)).toMatch(
        /"key":"meta.file_id","match":\{"any":\["pump(-copy)?","pump(-copy)?"\]\}/,
      );
    }
    const none = await r.search({
      queries: ['bread'],
      collection_names: ['kb'],
      filter: { source_prefix: "' OR 1=1" },
    });
    expect(none.json.documents[0]).toEqual([]);
  });
});
