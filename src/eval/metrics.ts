/**
 * The measures of `kilde eval` and `POST /api/v1/eval`, as BEIR reports them (trec_eval's
 * definitions, which BEIR computes with pytrec_eval):
 * - nDCG@10: `ndcg_cut_10`; gain = the graded relevance in the qrels, discount log2(rank + 1), the
 *   ideal ranking built from every judged-relevant document of the query;
 * - Recall@k: relevant documents among the first k / relevant documents of the query;
 * - MRR@10: 1 / rank of the first relevant document within the first 10, else 0.
 * A judgement of 0 or less means "not relevant" (BEIR test qrels carry some).
 */
export const METRICS = ['ndcg@10', 'recall@10', 'recall@100', 'mrr@10'] as const;
export type Metric = (typeof METRICS)[number];
export type MetricValues = Record<Metric, number>;

/** Relevance judgements of one query: document (or chunk) id → grade. */
export type Judgements = ReadonlyMap<string, number>;

export function isMetric(name: string): name is Metric {
  return (METRICS as readonly string[]).includes(name);
}

function dcg(gains: readonly number[]): number {
  return gains.reduce((sum, g, i) => sum + g / Math.log2(i + 2), 0);
}

/** Every measure of one query's ranking (unit ids, best first, no repeats). */
export function scoreQuery(ranked: readonly string[], judged: Judgements): MetricValues {
  const grade = (id: string) => Math.max(0, judged.get(id) ?? 0);
  const relevant = [...judged.values()].filter((g) => g > 0);
  const ideal = dcg(relevant.sort((a, b) => b - a).slice(0, 10));
  const first = ranked.slice(0, 10).findIndex((id) => grade(id) > 0);
  const found = (k: number) => ranked.slice(0, k).filter((id) => grade(id) > 0).length;
  return {
    'ndcg@10': ideal > 0 ? dcg(ranked.slice(0, 10).map(grade)) / ideal : 0,
    'recall@10': relevant.length > 0 ? found(10) / relevant.length : 0,
    'recall@100': relevant.length > 0 ? found(100) / relevant.length : 0,
    'mrr@10': first < 0 ? 0 : 1 / (first + 1),
  };
}

/** The mean of each measure over queries (0 for none). */
export function meanOf(rows: readonly MetricValues[]): MetricValues {
  const out = Object.fromEntries(METRICS.map((m) => [m, 0])) as MetricValues;
  if (rows.length === 0) return out;
  for (const row of rows) for (const m of METRICS) out[m] += row[m];
  for (const m of METRICS) out[m] /= rows.length;
  return out;
}
