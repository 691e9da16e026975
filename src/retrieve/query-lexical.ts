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
  /** Most collection sets remembered. */
  maxEntries?: number;
  now?: () => number;
}

const isLanguage = (l: string): l is Bm25Language => (BM25_LANGUAGES as readonly string[]).includes(l);

/**
 * The query side of the lexical search: a query is analysed in the languages of the documents it
 * searches, which ingestion chose per document (src/embed/bm25/analysis.ts): every language Kilde
 * stems that a document of these collections was detected in, and, when some document was detected
 * in none of them, the fallback (`SPARSE_LANGUAGE`, and any earlier one the table recorded). A
 * Danish and an English collection in one index each get their own; searching both, a query is
 * analysed both ways. Counting uses the `languages` payload index; a set's languages are kept for
 * `refreshMs`, so new documents in a new language are picked up without a restart.
 */
export function createQueryLexical(o: QueryLexicalOptions) {
  const now = o.now ?? Date.now;
  const known = new Map<string, { at: number; languages: Promise<Bm25Language[]> }>();

  async function resolve(collectionNames: readonly string[]): Promise<Bm25Language[]> {
    const count = (languages?: string[]) =>
      o.index.count({ collectionNames, ...(languages ? { languages } : {}) });
    const codes = BM25_LANGUAGES.map((l) => BM25_LANGUAGE_CODES[l]);
    const [total, covered, ...each] = await Promise.all([
      count(),
      count(codes),
      ...codes.map((code) => count([code])),
    ]);
    const languages = BM25_LANGUAGES.filter((_, i) => (each[i] ?? 0) > 0);
    if (total > covered || languages.length === 0) {
      const recorded = (await o.collection.current()).fallbackLanguages ?? [];
      for (const l of [o.analyzer.fallback, ...recorded.filter(isLanguage)]) {
        if (!languages.includes(l)) languages.push(l);
      }
    }
    return languages;
  }

  return {
    languagesOf(collectionNames: readonly string[]): Promise<Bm25Language[]> {
      const key = [...new Set(collectionNames)].sort().join('\u0000');
      const hit = known.get(key);
      if (hit && now() - hit.at < o.refreshMs) return hit.languages;
      const languages = resolve(collectionNames);
      known.delete(key);
      known.set(key, { at: now(), languages });
      languages.catch(() => known.delete(key));
      for (const k of known.keys()) {
        if (known.size <= (o.maxEntries ?? 256)) break;
        known.delete(k);
      }
      return languages;
    },
    /** The query's terms and BM25 vector in the languages of the collections searched. */
    async analyse(query: string, collectionNames: readonly string[]): Promise<QueryLexical> {
      return o.analyzer.query(query, await this.languagesOf(collectionNames));
    },
  };
}

export type QueryLexicalSide = ReturnType<typeof createQueryLexical>;
