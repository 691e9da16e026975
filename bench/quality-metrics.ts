import type { ChunkMeta } from '../src/index/contract.js';

export interface RankScores {
  ndcg: number;
  recall: number;
  mrr: number;
}

/**
 * BEIR's measures at cut-off k for one query: nDCG as trec_eval's ndcg_cut (gain = graded
 * relevance, discount log2(rank + 1), ideal ranking from the qrels), Recall (relevant documents
 * found / relevant documents) and MRR (1 / rank of the first relevant document).
 */
export function scoreRanking(
  ranked: readonly string[],
  rel: ReadonlyMap<string, number>,
  k: number,
): RankScores {
  let dcg = 0;
  let mrr = 0;
  let found = 0;
  ranked.slice(0, k).forEach((doc, i) => {
    const g = rel.get(doc) ?? 0;
    if (g <= 0) return;
    dcg += g / Math.log2(i + 2);
    found += 1;
    if (mrr === 0) mrr = 1 / (i + 1);
  });
  const ideal = [...rel.values()].filter((g) => g > 0).sort((a, b) => b - a);
  const idcg = ideal.slice(0, k).reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
  return { ndcg: idcg > 0 ? dcg / idcg : 0, recall: ideal.length > 0 ? found / ideal.length : 0, mrr };
}

/** The section number a heading starts with ("1.9.2 Den Spanske Syge" → "1.9.2"), if any. */
export function sectionOf(heading: string): string | undefined {
  const first = heading.trim().split(/\s+/)[0]?.replace(/\.$/, '');
  return first && /^\d+(\.\d+)*$/.test(first) ? first : undefined;
}

/** Whether a chunk's heading breadcrumb (`meta.headers`) names `section` exactly. */
export function breadcrumbHas(meta: ChunkMeta | undefined, section: string): boolean {
  const headers = Array.isArray(meta?.headers) ? meta.headers : [];
  return headers.some((h) => sectionOf(String(h)) === section);
}
