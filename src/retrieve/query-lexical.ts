import {
  BM25_LANGUAGE_CODES,
  BM25_LANGUAGES,
  type Bm25Language,
  type LexicalAnalyzer,
  type QueryLexical,
} from '../embed/bm25/analysis.js';
import type { CollectionInfo, VectorIndex } from '../index/store.js';

export interface QueryLexicalOptions {
  index: VectorIndex;
  analyzer: LexicalAnalyzer;
  /** The collection as described now (its recorded fallback languages). */
  collection: { current(): Promise<CollectionInfo> };
  /** How long the languages of a set of collections are trusted. */
  refreshMs: number;
  /**
   * After a write from this process (`VectorIndex.writeEpoch` moved), languages counted at least
   * this long ago are counted again, so a language this process just ingested is seen by the next
   * search. Default 1000.
   */
  writeRefreshMs?: number;
  /** Most collections remembered. */
  maxEntries?: number;
  now?: () => number;
}

const isLanguage = (l: string): l is Bm25Language => (BM25_LANGUAGES as readonly string[]).includes(l);

/**
 * Share of a collection's chunks a language must hold before queries are analysed in it: language
 * detection misreads some documents (5 of SciFact's 5,183 English abstracts come out Danish), and
 * analysing every query in a language only those few carry would add that language's reading of
 * every query word to every search.
 */
export const LANGUAGE_SHARE = 0.1;

/**
 * The query side of the lexical search: a query is analysed in the languages of the documents it
 * searches, which ingestion chose per document (src/embed/bm25/analysis.ts). For each collection
 * searched: every language Kilde stems that at least `LANGUAGE_SHARE` of its chunks were detected
 * in, and the fallback (`SPARSE_LANGUAGE`, with any earlier one the table recorded) when that share
 * was detected in none of them; the union over the collections. A Danish and an English collection
 * in one index each get their own language; searching both, a query is analysed both ways.
 * Counting uses the `languages` payload index; a collection's languages are kept for `refreshMs`
 * (sooner after a write from this process: `writeRefreshMs`), so new documents in a new language
 * are picked up without a restart, and a search in between makes no call to the index for them.
 */
export function createQueryLexical(o: QueryLexicalOptions) {
  const now = o.now ?? Date.now;
  const epoch = () => o.index.writeEpoch?.() ?? 0;
  const known = new Map<string, { at: number; epoch: number; languages: Promise<Bm25Language[]> }>();
  const codes = BM25_LANGUAGES.map((l) => BM25_LANGUAGE_CODES[l]);

  async function resolve(collection: string): Promise<Bm25Language[]> {
    const count = (languages?: string[]) =>
      o.index.count({ collectionNames: [collection], ...(languages ? { languages } : {}) });
    const [total, covered, ...each] = await Promise.all([
      count(),
      count(codes),
      ...codes.map((code) => count([code])),
    ]);
    const enough = (n: number) => n > 0 && n >= LANGUAGE_SHARE * total;
    const languages = BM25_LANGUAGES.filter((_, i) => enough(each[i] ?? 0));
    if (enough(total - covered) || languages.length === 0) {
      const recorded = (await o.collection.current()).fallbackLanguages ?? [];
      for (const l of [o.analyzer.fallback, ...recorded.filter(isLanguage)]) {
        if (!languages.includes(l)) languages.push(l);
      }
    }
    return languages;
  }

  function languagesOfOne(collection: string): Promise<Bm25Language[]> {
    const hit = known.get(collection);
    if (hit) {
      const age = now() - hit.at;
      const written = hit.epoch !== epoch() && age >= (o.writeRefreshMs ?? 1000);
      if (age < o.refreshMs && !written) return hit.languages;
    }
    const at = epoch();
    const languages = resolve(collection);
    known.delete(collection);
    known.set(collection, { at: now(), epoch: at, languages });
    languages.catch(() => known.delete(collection));
    for (const k of known.keys()) {
      if (known.size <= (o.maxEntries ?? 1024)) break;
      known.delete(k);
    }
    return languages;
  }

  return {
    async languagesOf(collectionNames: readonly string[]): Promise<Bm25Language[]> {
      const each = await Promise.all([...new Set(collectionNames)].map(languagesOfOne));
      const union: Bm25Language[] = [];
      for (const l of each.flat()) if (!union.includes(l)) union.push(l);
      return union;
    },
    /** The query's terms and BM25 vector in the languages of the collections searched. */
    async analyse(query: string, collectionNames: readonly string[]): Promise<QueryLexical> {
      return o.analyzer.query(query, await this.languagesOf(collectionNames));
    },
  };
}

export type QueryLexicalSide = ReturnType<typeof createQueryLexical>;
