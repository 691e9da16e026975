/** Deterministic PRNG (mulberry32), shared with `kilde eval compare`, so benchmark runs are comparable. */
export { mulberry32 } from '../../src/eval/significance.js';

/** Nearest-rank percentile of ascending-sorted values (NaN when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
  );
}
