import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { ingestLabelled, ONE_CHUNK } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/** Chat turns that are large but valid still get retrieval; only malformed requests get a 422. */
let ingest: Harness;
let r: RetrieveHarness;

beforeAll(async () => {
  ingest = await startIngest(ONE_CHUNK);
  await ingestLabelled(ingest, 'kb');
  await ingest.settle(); // the retrieval apps open their own index on the data directory
  r = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
});

afterAll(async () => {
  await r?.close();
  await ingest?.close();
});

const firstIds = (json: { metadatas: { file_id: string }[][] }) => json.metadatas[0]!.map((m) => m.file_id);

describe('large chat turns are clamped, not refused', () => {
  it('a user message over 2,000 characters (a long paste) is searched by its opening', async () => {
    const paste = `Why does the pump stop with fault ZQX4411? ${'Log line: all nominal. '.repeat(400)}`;
    expect(paste.length).toBeGreaterThan(9000);
    const { status, json } = await r.search({
      messages: [{ role: 'user', content: paste }],
      collection_names: ['kb'],
    });
    expect(status).toBe(200);
    expect(firstIds(json)[0]).toBe('pump');
  });

  it('a chat of more than 50 messages uses the last ones', async () => {
    const messages = Array.from({ length: 80 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: i === 78 ? 'Tell me about rye bread' : `turn ${i} about bicycle lanes`,
    }));
    const { status, json } = await r.search({ messages, collection_names: ['kb'] });
    expect(status).toBe(200);
    expect(firstIds(json)[0]).toBe('bread');
  });

  it('many attached collections, many queries and a large k are accepted', async () => {
    const collections = [...Array.from({ length: 40 }, (_, i) => `kb-${i}`), 'kb'];
    const queries = Array.from({ length: 12 }, () => 'income tax');
    const { status, json } = await r.search({ queries, collection_names: collections, k: 500 });
    expect(status).toBe(200);
    // The first 10 queries are searched (fused into one list: MERGE_QUERY_RESULTS); k is capped at 100.
    expect(json.documents).toHaveLength(1);
    expect(r.logs.lines.filter((l) => l.msg === 'search done').at(-1)).toMatchObject({ queries: 10 });
    expect(firstIds(json)[0]).toBe('tax');
  });

  it('malformed requests still answer 422', async () => {
    for (const body of [
      { queries: ['x'], collection_names: [] },
      { queries: ['x'], collection_names: ['kb'], k: 'five' },
      { queries: ['x'], collection_names: ['kb'], k: -1 },
      { messages: [{ content: 'no role' }], collection_names: ['kb'] },
      { queries: [42], collection_names: ['kb'] },
    ]) {
      const { status } = await r.search(body);
      expect(status, JSON.stringify(body)).toBe(422);
    }
  });
});
