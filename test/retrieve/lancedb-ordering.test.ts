import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DENSE_VECTOR } from '../../src/index/contract.js';
import { RRF_K } from '../../src/index/rrf.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { CODE_QUERY, fileIds, ingestLabelled, ONE_CHUNK } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/** Dense vs hybrid ordering on the embedded LanceDB index (its own full-text search), labelled set. */
let embed: FakeEmbeddingsServer;
let ingest: Harness;
const open: RetrieveHarness[] = [];

const denseEnv = { EMBEDDING_PROVIDER: 'http-compat', EMBEDDING_MODEL: 'hash', EMBEDDING_DIM: '128' };

async function retrieve(env: Record<string, string> = {}) {
  const r = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    ...denseEnv,
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ...env,
  });
  open.push(r);
  return r;
}

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 128 });
  ingest = await startIngest({ ...denseEnv, EMBEDDING_API_BASE_URL: embed.baseUrl, ...ONE_CHUNK });
  await ingestLabelled(ingest, 'kb');
  await ingest.settle(); // the retrieval apps open their own index on the data directory
});

afterAll(async () => {
  for (const r of open) await r.close();
  await ingest.close();
  await embed.close();
});

describe('dense vs hybrid ordering (labelled: the code-word query is answered by "pump")', () => {
  it('dense ranks the stop-word decoy first; hybrid puts the relevant chunk first by RRF', async () => {
    const dense = await retrieve();
    const d = await dense.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 });
    const denseOrder = fileIds(d.json.metadatas[0]);
    expect(denseOrder).toHaveLength(5);
    expect(denseOrder[0]).toBe('decoy');
    const pumpDenseRank = denseOrder.indexOf('pump') + 1;
    expect(pumpDenseRank).toBeGreaterThan(1);
    for (const s of d.json.distances[0]) expect(s).toBeGreaterThanOrEqual(0);

    const hybrid = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const h = await hybrid.search({ queries: [CODE_QUERY], collection_names: ['kb'], k: 5 });
    const hybridOrder = fileIds(h.json.metadatas[0]);
    expect(hybridOrder.slice(0, 2)).toEqual(['pump', 'decoy']);
    const [pump, decoy] = h.json.distances[0] as number[];
    // LanceDB's full-text side finds only "pump" (every other query word is a stop word).
    // RRF divided by its maximum over two lists, 2 / (k + 1).
    const max = 2 / (RRF_K + 1);
    expect(pump).toBeCloseTo((1 / (RRF_K + 1) + 1 / (RRF_K + pumpDenseRank)) / max, 12);
    expect(decoy).toBeCloseTo(1 / (RRF_K + 1) / max, 12);
    // Chunks without a lexical match keep their dense order behind the fused ones.
    expect(hybridOrder.slice(2)).toEqual(denseOrder.filter((id) => id !== 'pump' && id !== 'decoy'));
  });

  it('agrees with dense when the query has no rare term', async () => {
    const hybrid = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    const dense = await retrieve();
    const body = { queries: ['bicycle paths Copenhagen'], collection_names: ['kb'], k: 1 };
    expect(fileIds((await hybrid.search(body)).json.metadatas[0])).toEqual(['bikes']);
    expect(fileIds((await dense.search(body)).json.metadatas[0])).toEqual(['bikes']);
  });
});

describe('settings check on LanceDB', () => {
  const warned = (r: RetrieveHarness) =>
    r.logs.lines.filter((l) => l.check === 'index-settings' && l.level === 40).map((l) => l.msg);

  it('a dense size mismatch: warned at start-up, and not ready (every search would fail), naming the fix', async () => {
    const r = await retrieve({ EMBEDDING_DIM: '64' });
    const problem = `collection "ingestion_files" stores ${DENSE_VECTOR} of size 128 but EMBEDDING_DIM=64: every search would fail; set EMBEDDING_DIM=128 with the EMBEDDING_MODEL that wrote the collection, or point VECTORDB_INDEX at another collection and re-ingest`;
    expect(warned(r)).toEqual([`${problem} (readiness answers 503 until fixed)`]);
    const ready = await r.app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({ status: 'error', detail: `index: ${problem}` });
    // The same collection with the right size is ready.
    const fine = await retrieve();
    expect((await fine.app.inject({ url: '/health/ready' })).statusCode).toBe(200);
  });

  it('warns when the table is missing and is not ready', async () => {
    const r = await retrieve({ VECTORDB_INDEX: 'nope' });
    expect(warned(r)).toEqual([
      'collection "nope" does not exist yet: searches return no hits until something is ingested',
    ]);
    const ready = await r.app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().detail).toMatch(/^index: LanceDB table "nope" does not exist/);
  });

  it('has nothing to say when ingestion and retrieval agree', async () => {
    const r = await retrieve({ ENABLE_HYBRID_SEARCH: 'true' });
    expect(warned(r)).toEqual([]);
    expect((await r.app.inject({ url: '/health/ready' })).statusCode).toBe(200);
  });
});

describe('queries without a single searchable term', () => {
  it.each([
    ['hybrid', { ENABLE_HYBRID_SEARCH: 'true' }],
    ['lexical-only', { EMBEDDING_PROVIDER: 'none' }],
  ])('answer 200 in %s mode when every word is a stop word', async (_mode, env) => {
    const r = await retrieve(env);
    const { status, json } = await r.search({ queries: ['what is this about'], collection_names: ['kb'] });
    expect(status).toBe(200);
    expect(json.documents).toHaveLength(1);
    expect(json.documents[0].length).toBe(json.distances[0].length);
  });
});
