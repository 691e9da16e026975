import { contextualText, type LexicalAnalyzer, lexicalLanguageOf } from '../embed/bm25/analysis.js';
import type { SearchHit, StoredPoint } from '../index/contract.js';

/**
 * In-memory BM25 over chunks scrolled from the index, for hybrid search on a collection without
 * `text-sparse`. Document term weights are what ingestion would write to `text-sparse` (the chunk's
 * contextual header and text in its document's language, the same tf saturation); IDF is computed
 * over this corpus the way Qdrant's IDF modifier does: ln(1 + (N − n + 0.5) / (n + 0.5)).
 */
export class Bm25Corpus {
  private readonly docs: { point: StoredPoint; weights: Map<number, number> }[];
  private readonly df = new Map<number, number>();

  constructor(points: readonly StoredPoint[], analyzer: LexicalAnalyzer) {
    this.docs = points.map((point) => {
      const language = lexicalLanguageOf(point.meta.languages, analyzer.fallback, point.content);
      const v = analyzer.document(contextualText(point.content, point.meta), language).sparse;
      const weights = new Map<number, number>();
      v.indices.forEach((id, j) => {
        weights.set(id, v.values[j]!);
        this.df.set(id, (this.df.get(id) ?? 0) + 1);
      });
      return { point, weights };
    });
  }

  get size(): number {
    return this.docs.length;
  }

  search(queryIds: readonly number[], limit: number): SearchHit[] {
    const n = this.docs.length;
    const idf = new Map<number, number>();
    for (const id of new Set(queryIds)) {
      const df = this.df.get(id);
      if (df) idf.set(id, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
    }
    if (idf.size === 0) return [];
    const scored: SearchHit[] = [];
    for (const d of this.docs) {
      let score = 0;
      for (const [id, w] of idf) {
        const tf = d.weights.get(id);
        if (tf !== undefined) score += w * tf;
      }
      if (score > 0) scored.push({ ...d.point, score });
    }
    return scored.sort((a, b) => b.score - a.score).slice(0, limit);
  }
}
