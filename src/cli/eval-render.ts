import type { Comparison } from '../eval/compare.js';
import { METRICS, type Metric } from '../eval/metrics.js';
import type { EvalRun, RunSummary } from '../eval/run.js';

const LABEL: Record<Metric, string> = {
  'ndcg@10': 'nDCG@10',
  'recall@10': 'Recall@10',
  'recall@100': 'Recall@100',
  'mrr@10': 'MRR@10',
};

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

const f4 = (x: number) => x.toFixed(4);

/** A run for people: what was measured, the four means, and (with `perQuery`) every query's row. */
export function renderRun(run: EvalRun, perQuery = false): string {
  const head =
    `run ${run.id}${run.name ? ` "${run.name}"` : ''}: ${run.queries} queries on ` +
    `${run.collection_names.map((c) => `"${c}"`).join(', ')} (${run.k} chunks per query, pooled to documents)\n`;
  const skipped =
    run.skipped.unjudged + run.skipped.missing > 0
      ? `skipped: ${run.skipped.unjudged} queries without a relevant judgement, ${run.skipped.missing} judged ids without a query\n`
      : '';
  const means = table(METRICS.map((m) => [LABEL[m], f4(run.metrics[m])]));
  if (!perQuery) return `${head}${skipped}${means}`;
  const rows = table([
    ['query', ...METRICS.map((m) => LABEL[m]), 'relevant', 'first retrieved'],
    ...run.per_query.map((r) => [
      r.query_id,
      ...METRICS.map((m) => f4(r[m])),
      String(r.relevant),
      r.retrieved.slice(0, 3).join(' '),
    ]),
  ]);
  return `${head}${skipped}${means}\n${rows}`;
}

export function renderRuns(runs: readonly RunSummary[]): string {
  if (runs.length === 0) return 'No evaluation runs.\n';
  return table([
    ['run', 'name', 'collections', 'queries', 'nDCG@10', 'Recall@10', 'Recall@100', 'MRR@10'],
    ...runs.map((r) => [
      r.id,
      r.name ?? '',
      r.collection_names.join(','),
      String(r.queries),
      ...METRICS.map((m) => f4(r.metrics[m])),
    ]),
  ]);
}

/** The comparison table: means of A and B over shared queries, the difference, its p-value. */
export function renderComparison(c: Comparison, a: EvalRun, b: EvalRun): string {
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${f4(x)}`;
  const lines = table([
    ['measure', `A ${a.id}`, `B ${b.id}`, 'B − A', 'p'],
    ...c.rows.map((r) => [
      LABEL[r.metric],
      f4(r.a),
      f4(r.b),
      signed(r.delta),
      `${r.p < 0.001 ? '<0.001' : r.p.toFixed(3)}${r.p < 0.05 ? ' *' : ''}`,
    ]),
  ]);
  const paired =
    `${c.paired} paired queries` +
    (c.onlyA + c.onlyB > 0 ? ` (${c.onlyA} only in A, ${c.onlyB} only in B, left out)` : '') +
    '; p: two-sided paired randomization test, * below 0.05\n';
  const g = c.gate;
  const verdict =
    `gate: ${LABEL[g.metric]} ${g.drop > 0 ? `dropped ${f4(g.drop)}` : `did not drop (${signed(-g.drop)})`}, ` +
    `${f4(g.maxDrop)} allowed${g.alpha === undefined ? '' : ` (only a drop significant at p < ${g.alpha} fails)`}: ` +
    `${g.failed ? 'FAIL' : 'pass'}\n`;
  return `${lines}${paired}${verdict}`;
}
