import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileIdFor } from '../../src/index/identifiers.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, startIngest } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from '../retrieve/helpers/retrieve.js';

/** A labelled collection small enough to know every answer. */
const DOCS: Record<string, string> = {
  'bikes.md': '# Cycling\n\nBicycle lanes in Copenhagen are wide; cyclists ride separate bicycle paths.',
  'flu.md': '# Spanish flu\n\nThe Spanish flu pandemic of 1918 killed many; influenza spread fast.',
  'tax.md': '# Taxes\n\nIncome tax in Denmark is high; municipal and state tax are paid on income.',
  'bread.md': '# Rye bread\n\nDanish rye bread is dark and dense, made with sourdough.',
};

let ingest: Harness;
let retrieve: RetrieveHarness;

async function evalRequest(body: unknown, headers: Record<string, string> = AUTH) {
  const res = await retrieve.app.inject({
    method: 'POST',
    url: '/api/v1/eval',
    headers,
    payload: body as object,
  });
  return { status: res.statusCode, json: res.json() };
}

beforeAll(async () => {
  ingest = await startIngest({ CHUNK_SPLIT_BY: 'markdown' });
  for (const [name, text] of Object.entries(DOCS)) {
    const { body, headers } = multipartBody(
      { file_id: fileIdFor('kb', name), filename: name, collection_name: 'kb', user_id: 'u' },
      { name, content: text, type: 'text/markdown' },
    );
    const res = await ingest.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
  }
  await ingest.settle(); // the retrieval app opens its own index on the data directory
  retrieve = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
});

afterAll(async () => {
  await retrieve?.close();
  await ingest?.close();
});

const QUERIES = [
  { id: 'q-flu', text: 'spanish flu pandemic' },
  { id: 'q-bike', text: 'bicycle lanes' },
  { id: 'q-miss', text: 'sourdough rye' },
];
// q-miss is labelled with the wrong document on purpose: its score is known to be 0.
const QRELS = {
  'q-flu': { 'flu.md': 1 },
  'q-bike': { [fileIdFor('kb', 'bikes.md')]: 2 },
  'q-miss': { 'tax.md': 1 },
};

describe('POST /api/v1/eval', () => {
  it('scores labelled queries through the search path, names documents by path or file id, stores the run', async () => {
    const { status, json } = await evalRequest({
      collection_names: ['kb'],
      queries: QUERIES,
      qrels: QRELS,
      name: 'baseline',
    });
    expect(status).toBe(200);
    expect(json).toMatchObject({ name: 'baseline', collection_names: ['kb'], k: 100, queries: 3 });
    expect(json.settings).toMatchObject({ index: 'lancedb', embedding: 'none' });
    const rows = Object.fromEntries(
      (
        json.per_query as { query_id: string; 'ndcg@10': number; 'mrr@10': number; retrieved: string[] }[]
      ).map((r) => [r.query_id, r]),
    );
    expect(rows['q-flu']).toMatchObject({ 'ndcg@10': 1, 'mrr@10': 1 });
    expect(rows['q-flu']?.retrieved[0]).toBe('flu.md');
    expect(rows['q-bike']).toMatchObject({ 'ndcg@10': 1 });
    // Lexical search finds only the bread document for q-miss, which its label does not name.
    expect(rows['q-miss']).toMatchObject({
      'ndcg@10': 0,
      'recall@100': 0,
      retrieved: [fileIdFor('kb', 'bread.md')],
    });
    expect(json.metrics['recall@100']).toBeCloseTo(2 / 3, 12);

    const dir = join(ingest.dataDir, 'eval-runs');
    expect(await readdir(dir)).toEqual([`${json.id}.json`]);
    expect(JSON.parse(await readFile(join(dir, `${json.id}.json`), 'utf8'))).toEqual(json);

    const list = await retrieve.app.inject({ method: 'GET', url: '/api/v1/eval/runs', headers: AUTH });
    expect(list.json().runs).toEqual([
      {
        id: json.id,
        name: 'baseline',
        created_at: json.created_at,
        collection_names: ['kb'],
        queries: 3,
        metrics: json.metrics,
      },
    ]);
    const one = await retrieve.app.inject({
      method: 'GET',
      url: `/api/v1/eval/runs/${json.id}`,
      headers: AUTH,
    });
    expect(one.json()).toEqual(json);
  });

  it('store: false answers the run without keeping it', async () => {
    const before = (
      await retrieve.app.inject({ method: 'GET', url: '/api/v1/eval/runs', headers: AUTH })
    ).json().runs.length;
    const { status } = await evalRequest({
      collection_names: ['kb'],
      queries: QUERIES,
      qrels: QRELS,
      store: false,
    });
    expect(status).toBe(200);
    const after = (
      await retrieve.app.inject({ method: 'GET', url: '/api/v1/eval/runs', headers: AUTH })
    ).json().runs;
    expect(after).toHaveLength(before);
  });

  it('refuses without the bearer key, on malformed bodies, for empty collections and unknown runs', async () => {
    expect((await evalRequest({ collection_names: ['kb'], queries: QUERIES, qrels: QRELS }, {})).status).toBe(
      401,
    );
    const bad = await evalRequest({
      collection_names: ['kb'],
      queries: [
        { id: 'q', text: 'x' },
        { id: 'q', text: 'y' },
      ],
      qrels: {},
    });
    expect(bad.status).toBe(422);
    expect((await evalRequest({ collection_names: [], queries: QUERIES, qrels: QRELS })).status).toBe(422);
    const none = await evalRequest({
      collection_names: ['kb'],
      queries: QUERIES,
      qrels: { other: { 'flu.md': 1 } },
    });
    expect(none).toMatchObject({
      status: 422,
      json: { detail: 'no query has a relevant judgement in qrels' },
    });
    const missing = await evalRequest({ collection_names: ['nothing-here'], queries: QUERIES, qrels: QRELS });
    expect(missing).toMatchObject({ status: 404, json: { code: 'NOT_FOUND' } });
    expect(missing.json.detail).toContain('"nothing-here" holds no documents');
    for (const id of ['no-such-run', '..%2F..%2Fetc']) {
      const res = await retrieve.app.inject({ method: 'GET', url: `/api/v1/eval/runs/${id}`, headers: AUTH });
      expect(res.statusCode).toBe(404);
    }
  });
});
