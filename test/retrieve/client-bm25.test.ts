import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LexicalAnalyzer } from '../../src/embed/bm25/analysis.js';
import { type ChunkMeta, type IndexPoint, pointId } from '../../src/index/contract.js';
import { createLanceIndex } from '../../src/index/lancedb.js';
import type { VectorIndex } from '../../src/index/store.js';
import { Bm25Corpus } from '../../src/retrieve/client-bm25.js';
import { tempDirs } from '../helpers/temp-dirs.js';

const log = pino({ level: 'silent' });
const tempDir = tempDirs('kilde-client-bm25-');

/** Chunks of two languages, with titles and breadcrumbs, of different lengths. */
const CHUNKS: { text: string; title?: string; headers?: string[]; languages: string[] }[] = [
  {
    text: 'Folketinget vedtager lovene. Regeringen skal have et flertal i Folketinget imod sig for at gå af.',
    title: 'Danmarks styre',
    headers: ['2.2 Folketinget'],
    languages: ['da'],
  },
  {
    text: 'Under besættelsen samarbejdede regeringen med Tyskland, og modstandsbevægelsen voksede efter 1943.',
    title: 'Historie',
    headers: ['1.10 Danmark besat af Tyskland (1940-45)', '1.10.1 Besættelse og samarbejde'],
    languages: ['da'],
  },
  {
    text: 'Kommunerne driver folkeskolen og ældreplejen; regionerne driver sygehusene. Kommunerne opkræver skat.',
    title: 'Danmarks styre',
    headers: ['2.2.5 Det lokale selvstyre i kommuner og regioner'],
    languages: ['da'],
  },
  {
    text: 'Vitamin D supplementation reduced the risk of fractures in elderly women over two years of follow-up.',
    title: 'Vitamin D and fractures',
    languages: ['en'],
  },
  {
    text: 'Fractures of the hip in elderly patients carry a high mortality; surgery within 48 hours lowers it.',
    languages: ['en'],
  },
  {
    text: 'The elderly are a growing share of the population. Vitamin intake and fractures are discussed in chapter three, fractures in chapter four, and vitamin D in chapter five.',
    languages: ['en'],
  },
];

function points(analyzer: LexicalAnalyzer): IndexPoint[] {
  return CHUNKS.map((c, n) => {
    const meta: ChunkMeta = {
      collection_name: 'c',
      collection_type: 'knowledge',
      file_id: `f${n}`,
      ingest_version: 'v1',
      split_id: 0,
      languages: c.languages,
      ...(c.title ? { title: c.title } : {}),
      ...(c.headers ? { headers: c.headers } : {}),
    };
    // What ingestion writes to LanceDB's lexical column for the chunk.
    const { terms } = analyzer.chunk(c.text, meta, c.languages, analyzer.fallback, false);
    return { id: pointId(`f${n}`, 'v1', 0), content: c.text, meta, lexical: terms.join(' ') };
  });
}

describe('client-side BM25 (a collection without a lexical side in the engine)', () => {
  const open: VectorIndex[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((i) => i.close()));
  });

  it("ranks and scores as LanceDB's full-text index does over the same chunks", async () => {
    const analyzer = new LexicalAnalyzer('english');
    const index = await createLanceIndex(
      { uri: await tempDir(), collection: 'ingestion_files', sparse: false, timeoutMs: 10_000 },
      { log },
    );
    open.push(index);
    await index.ensureCollection();
    const written = points(analyzer);
    await index.upsert(written);
    await index.settle?.();
    const corpus = new Bm25Corpus(written, analyzer);
    expect(corpus.size).toBe(CHUNKS.length);

    const queries: [string, ('english' | 'danish')[]][] = [
      ['Hvem driver sygehusene og folkeskolen?', ['danish']],
      ['Hvad skete under besættelsen af Danmark?', ['danish']],
      ['regeringen folketinget', ['danish']],
      ['vitamin D and fractures in the elderly', ['english']],
      ['hip fracture mortality', ['english']],
      ['fractures regeringen', ['english', 'danish']],
    ];
    for (const [text, languages] of queries) {
      const { terms } = analyzer.query(text, languages);
      const engine = await index.searchLexical({ text, terms }, { collectionNames: ['c'] }, 10);
      const client = corpus.search(terms, 10);
      expect(engine.length, text).toBeGreaterThan(0);
      expect(
        client.map((h) => h.meta.file_id),
        text,
      ).toEqual(engine.map((h) => h.meta.file_id));
      for (const [n, hit] of client.entries()) expect(hit.score, text).toBeCloseTo(engine[n]!.score, 4);
    }
  });

  it('finds nothing for terms no chunk holds, and keeps Danish stop words that are indexed', () => {
    const analyzer = new LexicalAnalyzer('english');
    const corpus = new Bm25Corpus(points(analyzer), analyzer);
    expect(corpus.search(analyzer.query('kvantecomputer', ['danish']).terms, 10)).toEqual([]);
    expect(corpus.search([], 10)).toEqual([]);
    // "under" is a Danish stop word the index keeps ("under besættelsen"): it alone finds the chunk.
    const under = analyzer.query('under', ['danish']).terms;
    expect(under).toHaveLength(1);
    expect(corpus.search(under, 10).map((h) => h.meta.file_id)).toEqual(['f1']);
  });
});
