import type { LexicalAnalyzer } from '../embed/bm25/analysis.js';
import type { SearchHit, StoredPoint } from '../index/contract.js';

/** BM25's term-frequency saturation and length normalisation: LanceDB's (and Lucene's) defaults. */
const K1 = 1.2;
const B = 0.75;

/**
 * In-memory BM25 over chunks scrolled from the index, for a collection without a lexical side in the
 * engine (a Qdrant collection without `text-sparse`). It ranks as LanceDB's full-text index does
 * (the offline default): each chunk's terms are what ingestion writes to LanceDB's `lexical` column
 * (its contextual header and text, analysed in its document's language, a language's stop words
 * kept where they are indexed), the query's are its analysed terms (each once), and the score is
 * BM25 with k1 1.2, b 0.75, the chunk's length against the corpus's average, and IDF
 * ln(1 + (N − n + 0.5) / (n + 0.5)) over the chunks that have terms. Measured against fastembed's
 * `text-sparse` weights (a fixed average length of 256, stop words dropped) in docs/quality.md.
 */
export class Bm25Corpus {
  private readonly points: StoredPoint[] = [];
  private readonly lengths: number[] = [];
  /** Per term, the chunks holding it and how often. */
  private readonly postings = new Map<string, { doc: number; tf: number }[]>();
  private readonly average: number;

  constructor(points: readonly StoredPoint[], analyzer: LexicalAnalyzer) {
    let total = 0;
    for (const point of points) {
      const languages = Array.isArray(point.meta.languages) ? point.meta.languages : undefined;
      const { terms } = analyzer.chunk(point.content, point.meta, languages, analyzer.fallback, false);
      if (terms.length === 0) continue;
      const doc = this.points.length;
      this.points.push(point);
      this.lengths.push(terms.length);
      total += terms.length;
      const tf = new Map<string, number>();
      for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [term, n] of tf) {
        const list = this.postings.get(term);
        if (list) list.push({ doc, tf: n });
        else this.postings.set(term, [{ doc, tf: n }]);
      }
    }
    this.average = this.points.length === 0 ? 0 : total / this.points.length;
  }

  get size(): number {
    return this.points.length;
  }

  /** The `limit` best chunks for the query's analysed terms (each counted once), best first. */
  search(queryTerms: readonly string[], limit: number): SearchHit[] {
    const n = this.points.length;
    const scores = new Map<number, number>();
    for (const term of new Set(queryTerms)) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      for (const { doc, tf } of list) {
        const norm = K1 * (1 - B + (B * this.lengths[doc]!) / this.average);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * (K1 + 1) * tf) / (tf + norm));
      }
    }
    return [...scores]
      .filter(([, score]) => score > 0)
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, limit)
      .map(([doc, score]) => ({ ...this.points[doc]!, score }));
  }
}
