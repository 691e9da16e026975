import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LexicalAnalyzer } from '../../src/embed/bm25/analysis.js';
import { createQueryLexical } from '../../src/retrieve/query-lexical.js';
import { DANISH_CORPUS } from '../fixtures/index.js';
import { type Harness, pointsOf, startIngest, uploadFile } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

const ENGLISH = `# Cycling in Copenhagen

## Winter riding

Riders keep cycling through the whole winter, because the city clears the bicycle lanes before
the roads. Most commuters own a sturdy bike with mudguards and lights.
`;

let ingest: Harness;
let retrieve: RetrieveHarness;

const put = (fileId: string, collection: string, name: string, text: string) =>
  uploadFile(
    ingest.app,
    { file_id: fileId, filename: name, collection_name: collection, user_id: 'u' },
    { name, content: text, type: 'text/markdown' },
  );

const search = async (query: string, collections: string[], k = 5) => {
  const { status, json } = await retrieve.search({ queries: [query], collection_names: collections, k });
  expect(status).toBe(200);
  return { contents: json.documents[0] as string[], metas: json.metadatas[0] as Record<string, unknown>[] };
};

beforeAll(async () => {
  // One index, SPARSE_LANGUAGE=english as by default: the Danish chapter is still analysed in Danish.
  ingest = await startIngest({ CHUNK_SPLIT_BY: 'markdown', SPARSE_LANGUAGE: 'english' });
  await put('da-1', 'da', '1.1.md', await readFile(join(DANISH_CORPUS, '1.1.md'), 'utf8'));
  await put('en-1', 'en', 'cycling.md', ENGLISH);
  await ingest.settle(); // the retrieval apps open their own index on the data directory
  retrieve = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    EMBEDDING_PROVIDER: 'none',
    SPARSE_LANGUAGE: 'english',
  });
});

afterAll(async () => {
  await retrieve?.close();
  await ingest?.close();
});

describe('language per document, per collection on the query side', () => {
  it('detects each document’s language at ingest', async () => {
    expect((await pointsOf(ingest.index, 'da-1'))[0]?.meta.languages?.[0]).toBe('da');
    expect((await pointsOf(ingest.index, 'en-1'))[0]?.meta.languages?.[0]).toBe('en');
  });

  it('finds a Danish inflection through Danish stemming on both sides, which English would miss', async () => {
    const analyzer = new LexicalAnalyzer('english');
    // "bønder" and "bønderne" share a Danish stem and no English one.
    expect(analyzer.query('bønder', ['danish']).terms).toEqual(analyzer.document('bønderne', 'danish').terms);
    expect(analyzer.query('bønder', ['english']).terms).not.toEqual(
      analyzer.document('bønderne', 'english').terms,
    );
    const { contents } = await search('bønder', ['da']);
    expect(contents[0]).toContain('Bønderne ryddede skov');
  });

  it('finds an English inflection in the English collection of the same index', async () => {
    const { contents } = await search('rider bicycles', ['en']);
    expect(contents[0]).toContain('Riders keep cycling');
  });

  it('analyses a query over both collections in both languages', async () => {
    const both = await search('bønder riders', ['da', 'en'], 10);
    expect(both.contents.some((c) => c.includes('Bønderne ryddede skov'))).toBe(true);
    expect(both.contents.some((c) => c.includes('Riders keep cycling'))).toBe(true);
  });

  it('resolves the query languages from the documents and keeps them for a while', async () => {
    let t = 0;
    const lexical = createQueryLexical({
      index: ingest.index,
      analyzer: new LexicalAnalyzer('english'),
      collection: { current: () => ingest.index.describe() },
      refreshMs: 1000,
      now: () => t,
    });
    expect(await lexical.languagesOf(['da'])).toEqual(['danish']);
    expect(await lexical.languagesOf(['en'])).toEqual(['english']);
    expect(await lexical.languagesOf(['en', 'da'])).toEqual(['english', 'danish']);
    // A collection with no document Kilde can stem: the fallback and every one the table recorded.
    expect(await lexical.languagesOf(['nothing'])).toEqual(['english']);
    await put(
      'fr-1',
      'fr',
      'fr.md',
      '# Vélo\n\nLes cyclistes roulent tout l’hiver sur les pistes cyclables de la ville.',
    );
    expect(await lexical.languagesOf(['fr'])).toEqual(['english']);
    await put('fr-2', 'fr', 'da.md', await readFile(join(DANISH_CORPUS, '1.2.md'), 'utf8'));
    expect(await lexical.languagesOf(['fr'])).toEqual(['english']);
    t += 1000;
    expect(await lexical.languagesOf(['fr'])).toEqual(['danish', 'english']);
  });

  it('counts a collection’s languages again right after this process writes it, not on every search', async () => {
    const lexical = createQueryLexical({
      index: ingest.index,
      analyzer: new LexicalAnalyzer('english'),
      collection: { current: () => ingest.index.describe() },
      refreshMs: 60_000,
      writeRefreshMs: 0,
      now: () => 0,
    });
    await put('nl-1', 'nl', 'nl.md', '# Fiets\n\nDe fietsers rijden de hele winter door de stad.');
    expect(await lexical.languagesOf(['nl'])).toEqual(['english']);
    expect(await lexical.languagesOf(['nl'])).toEqual(['english']);
    // The ingest harness writes through this process's writer: no time passes, and it is seen.
    await put('nl-2', 'nl', 'da.md', await readFile(join(DANISH_CORPUS, '1.2.md'), 'utf8'));
    expect(await lexical.languagesOf(['nl'])).toEqual(['danish', 'english']);
  });
});

describe('a language few of a collection’s chunks were detected in', () => {
  it('does not enter its queries (a misdetected document would match every English stop word)', async () => {
    const sections = Array.from(
      { length: 40 },
      (_, i) =>
        `## Route ${i}\n\nThe cycle route number ${i} follows the harbour and the lakes, and it is cleared of snow in the winter before the roads are.`,
    ).join('\n\n');
    await put('mixed-en', 'mixed', 'routes.md', `# Routes\n\n${sections}\n`);
    await put(
      'mixed-da',
      'mixed',
      'da.md',
      'Danmark og Norge blev angrebet og besat af det tyske militær den 9. april 1940, og det var især interessen for Norge, der lå bag.',
    );
    const lexical = createQueryLexical({
      index: ingest.index,
      analyzer: new LexicalAnalyzer('english'),
      collection: { current: () => ingest.index.describe() },
      refreshMs: 1000,
    });
    const danishChunks = (await pointsOf(ingest.index, 'mixed-da')).length;
    const englishChunks = (await pointsOf(ingest.index, 'mixed-en')).length;
    expect(danishChunks / (danishChunks + englishChunks)).toBeLessThan(0.1);
    expect(await lexical.languagesOf(['mixed'])).toEqual(['english']);
    expect(await lexical.languagesOf(['mixed', 'da'])).toEqual(['english', 'danish']);
  });
});

describe('contextual chunk headers', () => {
  it('index the heading breadcrumb with every chunk, and leave the returned content as it was', async () => {
    // "Oldtid" is only in the chapter heading; its sections' chunks are found through their breadcrumb.
    const { contents, metas } = await search('oldtid', ['da'], 10);
    const sections = metas.map((m) => (m.headers as string[]).at(-1));
    expect(sections).toContain('1.1.3 Vikingetiden');
    const viking = contents[sections.indexOf('1.1.3 Vikingetiden')]!;
    expect(viking.startsWith('## 1.1.3 Vikingetiden')).toBe(true);
    expect(viking).not.toContain('Oldtid');
  });
});
