import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { ingestText } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/**
 * Open WebUI attaches a file as collection `file-<id>` and, with the lexical default, asks for
 * "give me a summary of the attached file": words the document does not contain. The small
 * collection answers its opening chunks in reading order; a large knowledge base answers only hits.
 */
const REPORT = Array.from(
  { length: 6 },
  (_, i) => `Section ${i + 1}: the harbour crane number ${i + 1} lifts containers onto the quay.`,
).join('\n\n');

let ingest: Harness;
let r: RetrieveHarness;

beforeAll(async () => {
  // One paragraph, one chunk.
  ingest = await startIngest({ CHUNK_SPLIT_BY: 'passage', CHUNK_SIZE: '1', CHUNK_OVERLAP: '0' });
  await ingestText(ingest, 'rep', 'file-rep', REPORT);
  // A knowledge base over the bound: 12 one-line files.
  for (let i = 0; i < 12; i++) {
    await ingestText(ingest, `kb${i}`, 'big-kb', `Note ${i}: the ferry to Aarhus leaves at dawn.`);
  }
  await ingest.settle(); // the retrieval apps open their own index on the data directory
  r = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    EMBEDDING_PROVIDER: 'none',
    SMALL_COLLECTION_CHUNKS: '10',
  });
});

afterAll(async () => {
  await r?.close();
  await ingest?.close();
});

describe('ordinary prompts on an attached file', () => {
  it.each(['give me a summary of the attached file', 'What are the key points?', 'tl;dr'])(
    '"%s" gets the opening chunks in reading order',
    async (prompt) => {
      const { status, json } = await r.search({
        messages: [{ role: 'user', content: prompt }],
        collection_names: ['file-rep'],
        k: 3,
      });
      expect(status).toBe(200);
      expect(json.metadatas[0].map((m: { split_id: number }) => m.split_id)).toEqual([0, 1, 2]);
      expect(json.documents[0][0]).toContain('Section 1');
      expect(json.distances[0]).toEqual([0, 0, 0]);
    },
  );

  it('still answers what matched when something does', async () => {
    const { json } = await r.search({ queries: ['crane number 5'], collection_names: ['file-rep'], k: 3 });
    expect(json.documents[0][0]).toContain('Section 5');
    expect(json.distances[0][0]).toBeGreaterThan(0);
  });

  it('shares k across several attached files, each from its beginning', async () => {
    await ingestText(ingest, 'memo', 'file-memo', 'Memo: lunch is served at noon in the canteen.');
    const docs = await eventually(async () => {
      const { json } = await r.search({
        queries: ['tl;dr'],
        collection_names: ['file-rep', 'file-memo'],
        k: 4,
      });
      const found: string[] = json.documents[0];
      return found.some((d) => d.includes('Memo')) && found;
    }, 100);
    expect(docs).toHaveLength(4);
    expect(docs.filter((d) => d.includes('Memo'))).toHaveLength(1);
    expect(docs[0]).toContain('Section 1');
  });

  it('a large knowledge base answers nothing rather than arbitrary chunks', async () => {
    const { json } = await r.search({ queries: ['give me a summary'], collection_names: ['big-kb'], k: 3 });
    expect(json.documents[0]).toEqual([]);
  });
});
