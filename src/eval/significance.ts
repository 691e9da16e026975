/**
 * The paired significance test of `kilde eval compare`: a two-sided randomization (permutation)
 * test on per-query differences, the test IR evaluation commonly uses (Smucker, Allan & Carterette,
 * "A comparison of statistical significance tests for information retrieval evaluation", CIKM
 * 2007). Under the null hypothesis the two systems are exchangeable on every query, so each
 * difference is equally likely to carry either sign: the p-value is the share of sign assignments
 * whose mean difference is at least as far from zero as the observed one. Up to 16 queries every
 * assignment is enumerated (exact); beyond, `samples` assignments are drawn from a seeded PRNG, so
 * the same two runs always give the same p-value.
 */

/** Deterministic PRNG (mulberry32): uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RandomizationOptions {
  /** Random sign assignments drawn when the test is not exact. Default 10 000. */
  samples?: number;
  /** PRNG seed. Default 42. */
  seed?: number;
}

const EXACT_MAX = 16;
/** Sums within this of the observed one count as "as extreme" (floating-point ties). */
const EPSILON = 1e-12;

/** Two-sided p-value of the paired differences `b − a` (1 when every difference is 0 or there are none). */
export function pairedRandomizationTest(diffs: readonly number[], o: RandomizationOptions = {}): number {
  const n = diffs.length;
  if (n === 0) return 1;
  const observed = Math.abs(diffs.reduce((s, d) => s + d, 0));
  if (observed <= EPSILON) return 1;
  if (n <= EXACT_MAX) {
    let extreme = 0;
    const total = 2 ** n;
    for (let mask = 0; mask < total; mask++) {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += mask & (1 << i) ? -diffs[i]! : diffs[i]!;
      if (Math.abs(sum) >= observed - EPSILON) extreme++;
    }
    return extreme / total;
  }
  const samples = o.samples ?? 10_000;
  const random = mulberry32(o.seed ?? 42);
  let extreme = 0;
  for (let s = 0; s < samples; s++) {
    let sum = 0;
    for (const d of diffs) sum += random() < 0.5 ? -d : d;
    if (Math.abs(sum) >= observed - EPSILON) extreme++;
  }
  // The observed assignment counts as one of the samples (Phipson & Smyth 2010): never exactly 0.
  return (extreme + 1) / (samples + 1);
}
