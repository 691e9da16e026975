import { METRICS, type Metric } from './metrics.js';
import type { EvalRun } from './run.js';
import { pairedRandomizationTest } from './significance.js';

export interface MetricComparison {
  metric: Metric;
  /** Means over the queries both runs scored. */
  a: number;
  b: number;
  /** b − a. */
  delta: number;
  /** Two-sided p-value of the paired randomization test. */
  p: number;
}

export interface GateOptions {
  /** The measure the gate watches. */
  metric: Metric;
  /** Largest drop of that measure (a − b, absolute) that still passes. */
  maxDrop: number;
  /** When set, a drop fails only if it is also significant (p < alpha). */
  alpha?: number | undefined;
}

export interface Comparison {
  a: string;
  b: string;
  /** Queries scored by both runs: the pairs the means and the test use. */
  paired: number;
  onlyA: number;
  onlyB: number;
  rows: MetricComparison[];
  gate: GateOptions & { drop: number; failed: boolean };
}

/**
 * Run B against run A, query by query. Means are taken over the queries both scored, so runs over
 * different query sets are still compared on common ground (and the counts say what was left out).
 */
export function compareRuns(a: EvalRun, b: EvalRun, gate: GateOptions): Comparison {
  const byId = new Map(a.per_query.map((r) => [r.query_id, r]));
  const pairs = b.per_query.flatMap((rb) => {
    const ra = byId.get(rb.query_id);
    return ra ? [[ra, rb] as const] : [];
  });
  const rows = METRICS.map((metric): MetricComparison => {
    const diffs = pairs.map(([ra, rb]) => rb[metric] - ra[metric]);
    const mean = (side: 0 | 1) =>
      pairs.length === 0 ? 0 : pairs.reduce((s, p) => s + p[side][metric], 0) / pairs.length;
    const ma = mean(0);
    const mb = mean(1);
    return { metric, a: ma, b: mb, delta: mb - ma, p: pairedRandomizationTest(diffs) };
  });
  const watched = rows.find((r) => r.metric === gate.metric)!;
  const drop = -watched.delta;
  const significant = gate.alpha === undefined || watched.p < gate.alpha;
  return {
    a: a.id,
    b: b.id,
    paired: pairs.length,
    onlyA: a.per_query.length - pairs.length,
    onlyB: b.per_query.length - pairs.length,
    rows,
    // A tiny epsilon keeps a drop of exactly the threshold from failing on rounding.
    gate: { ...gate, drop, failed: drop > gate.maxDrop + 1e-12 && significant },
  };
}
