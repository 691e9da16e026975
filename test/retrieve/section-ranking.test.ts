import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, pointsOf, startIngest, uploadFile } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/**
 * The offline default (lexical-only, embedded LanceDB) over one Markdown document whose long
 * section repeats the question's word in every chunk, while a short section explains it: the
 * question reaches the short section before the long one's second chunk.
 */
const BOOK = [
  '# Defence policy',
  '',
  '## 4.4.3 Territorial defence',
  '',
  'Since 2014 NATO members in Europe have strengthened their territorial defence, and NATO asked its members to spend more; NATO exercises grew.',
  '',
  'The Baltic states joined NATO in 2004, and NATO troops now train there every year, so NATO planning again looks at the eastern border.',
  '',
  'Denmark sends ships and aircraft to NATO missions, and NATO plans count on them; the government raised the budget to meet NATO targets.',
  '',
  '## 1.11.1 The Cold War',
  '',
  'In 1949 Denmark joined NATO, a defence alliance of Western Europe and North America; NATO members promise to defend each other.',
].join('\n');

let ingest: Harness;
let retrieve: RetrieveHarness;

beforeAll(async () => {
  ingest = await startIngest({ CHUNK_SPLIT_BY: 'markdown', CHUNK_SIZE: '60', CHUNK_OVERLAP: '0' });
  await uploadFile(
    ingest.app,
    { file_id: 'book', filename: 'book.md', collection_name: 'kb', user_id: 'u1' },
    { name: 'book.md', content: BOOK, type: 'text/markdown' },
  );
  await ingest.settle();
  retrieve = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
});

afterAll(async () => {
  await retrieve?.close();
  await ingest?.close();
});

const section = (meta: Record<string, unknown>) => (meta.headers as string[]).at(-1);

describe('a section is ranked by its best chunk (lexical modes)', () => {
  it("puts the other section's chunk above the long section's further chunks; scores stay in rank order", async () => {
    // One chunk a paragraph, none spanning two sections.
    const points = await pointsOf(ingest.index, 'book');
    expect(points.map((p) => section(p.meta))).toEqual([
      '4.4.3 Territorial defence',
      '4.4.3 Territorial defence',
      '4.4.3 Territorial defence',
      '1.11.1 The Cold War',
    ]);
    const r = await retrieve.search({ queries: ['What is NATO?'], collection_names: ['kb'], k: 4 });
    expect(r.status).toBe(200);
    // BM25 alone ranks the three "Territorial defence" chunks (NATO three times each) above "The
    // Cold War" (twice); its second and third chunks count half and a quarter.
    expect(r.json.metadatas[0].map(section)).toEqual([
      '4.4.3 Territorial defence',
      '1.11.1 The Cold War',
      '4.4.3 Territorial defence',
      '4.4.3 Territorial defence',
    ]);
    const scores = r.json.distances[0] as number[];
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });
});
