import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { fileIds, ingestLabelled, ONE_CHUNK } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/**
 * Open WebUI shows `distances` as a percentage and thresholds them: every search path must answer
 * scores in [0, 1], higher = better, in ranking order — lexical BM25 included (it was unbounded).
 */
const QUERY = 'pump fault ZQX4411 inlet valve restart';
const DIM = 64;
const dense = { EMBEDDING_PROVIDER: 'http-compat', EMBEDDING_MODEL: 'hash', EMBEDDING_DIM: String(DIM) };

let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let rerank: FakeRerankServer;
let lance: Harness;
const ingests: Harness[] = [];
const open: RetrieveHarness[] = [];

async function retrieve(env: Record<string, string>) {
  const r = await startRetrieve({ EMBEDDING_API_BASE_URL: embed.baseUrl, ...env });
  open.push(r);
  return r;
}

/** Bounded, non-increasing, and the relevant chunk first. */
async function expectBounded(r: RetrieveHarness, extra: Record<string, unknown> = {}) {
  const { status, json } = await r.search({ queries: [QUERY], collection_names: ['kb'], k: 5, ...extra });
  expect(status).toBe(200);
  const scores = json.distances[0] as number[];
  expect(scores.length).toBeGreaterThan(0);
  expect(fileIds(json.metadatas[0])[0]).toBe('pump');
  for (const s of scores) {
    expect(s).toBeGreaterThanOrEqual(0);
    expect(s).toBeLessThanOrEqual(1);
  }
  expect(scores).toEqual([...scores].sort((a, b) => b - a));
  return scores;
}

beforeAll(async () => {
  qdrant = await startQdrantFake();
  embed = await startFakeOpenAIEmbeddings({ dim: DIM });
  rerank = await startFakeRerankServer();
  lance = await startIngest({ ...dense, EMBEDDING_API_BASE_URL: embed.baseUrl, ...ONE_CHUNK });
  ingests.push(lance);
  await ingestLabelled(lance, 'kb');
  for (const [index, sparse] of [
    ['plain', 'false'],
    ['sparse', 'true'],
  ] as const) {
    const h = await startIngest({
      VECTORDB_URI: qdrant.url,
      VECTORDB_INDEX: index,
      ENABLE_SPARSE_EMBEDDINGS: sparse,
      ...dense,
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      ...ONE_CHUNK,
    });
    ingests.push(h);
    await ingestLabelled(h, 'kb');
  }
});

afterAll(async () => {
  for (const r of open) await r.close();
  for (const h of ingests) await h.close();
  await Promise.all([qdrant?.close(), embed?.close(), rerank?.close()]);
});

describe('scores in [0, 1] on every path', () => {
  it('lexical on LanceDB (full-text BM25): s / (s + 8), below 1 for a strong match', async () => {
    const r = await retrieve({ KILDE_DATA_DIR: lance.dataDir, EMBEDDING_PROVIDER: 'none' });
    const [top] = await expectBounded(r);
    // Five of the six query words match: a strong but not a perfect score.
    expect(top).toBeGreaterThan(0.5);
    expect(top).toBeLessThan(1);
  });

  it('lexical on Qdrant (text-sparse with IDF) and client-side BM25 (no text-sparse)', async () => {
    for (const index of ['sparse', 'plain']) {
      const r = await retrieve({
        VECTORDB_URI: qdrant.url,
        VECTORDB_INDEX: index,
        EMBEDDING_PROVIDER: 'none',
      });
      const [top] = await expectBounded(r);
      expect(top).toBeLessThan(1);
    }
  });

  it('dense, hybrid (LanceDB, Qdrant server-side, client-side fusion) and merged query lists', async () => {
    await expectBounded(await retrieve({ KILDE_DATA_DIR: lance.dataDir, ...dense }));
    await expectBounded(
      await retrieve({ KILDE_DATA_DIR: lance.dataDir, ...dense, ENABLE_HYBRID_SEARCH: 'true' }),
    );
    for (const index of ['sparse', 'plain']) {
      await expectBounded(
        await retrieve({
          VECTORDB_URI: qdrant.url,
          VECTORDB_INDEX: index,
          ...dense,
          ENABLE_HYBRID_SEARCH: 'true',
        }),
      );
    }
    const merged = await retrieve({
      KILDE_DATA_DIR: lance.dataDir,
      EMBEDDING_PROVIDER: 'none',
      MERGE_QUERY_RESULTS: 'true',
    });
    const { json } = await merged.search({ queries: [QUERY, 'inlet valve'], collection_names: ['kb'], k: 3 });
    for (const s of json.distances[0] as number[]) expect(s).toBeLessThanOrEqual(1);
  });

  it('a reranker answering raw logits is mapped through the logistic function', async () => {
    rerank.mode = { kind: 'ok', shape: 'tei', logits: true };
    const r = await retrieve({
      KILDE_DATA_DIR: lance.dataDir,
      EMBEDDING_PROVIDER: 'none',
      ENABLE_RERANKING: 'true',
      RERANK_API_BASE_URL: rerank.url,
    });
    const scores = await expectBounded(r);
    // Every query word is in the pump chunk → logit 8 − 4 = 4 → σ(4) ≈ 0.982.
    expect(scores[0]).toBeCloseTo(1 / (1 + Math.exp(-4)), 6);
  });
});
