import { describe, expect, it } from 'vitest';
import { meanOf, scoreQuery } from '../../src/eval/metrics.js';
import { pairedRandomizationTest } from '../../src/eval/significance.js';

const judged = (entries: Record<string, number>) => new Map(Object.entries(entries));

describe('scoreQuery (trec_eval definitions)', () => {
  it('a perfect ranking scores 1 everywhere', () => {
    expect(scoreQuery(['a', 'b', 'x'], judged({ a: 1, b: 1 }))).toEqual({
      'ndcg@10': 1,
      'recall@10': 1,
      'recall@100': 1,
      'mrr@10': 1,
    });
  });

  it('graded nDCG@10: gains discounted by log2(rank + 1), ideal order from the qrels', () => {
    // Ranked: x (0), b (grade 1), a (grade 2). DCG = 1/log2(3) + 2/log2(4) = 0.63093 + 1.
    // Ideal: a (2), b (1): IDCG = 2/log2(2) + 1/log2(3) = 2.63093.
    const s = scoreQuery(['x', 'b', 'a'], judged({ a: 2, b: 1 }));
    expect(s['ndcg@10']).toBeCloseTo((1 / Math.log2(3) + 1) / (2 + 1 / Math.log2(3)), 12);
    expect(s['mrr@10']).toBe(0.5);
    expect(s['recall@10']).toBe(1);
  });

  it('cut-offs: a relevant document at rank 11 counts for Recall@100 only', () => {
    const ranked = [...Array.from({ length: 10 }, (_, i) => `n${i}`), 'a'];
    expect(scoreQuery(ranked, judged({ a: 1, b: 1 }))).toEqual({
      'ndcg@10': 0,
      'recall@10': 0,
      'recall@100': 0.5,
      'mrr@10': 0,
    });
  });

  it('judgements of 0 or below are not relevant (BEIR test qrels carry them)', () => {
    const s = scoreQuery(['z', 'a'], judged({ z: 0, a: 1 }));
    expect(s['mrr@10']).toBe(0.5);
    expect(s['recall@10']).toBe(1);
    expect(s['ndcg@10']).toBeCloseTo(1 / Math.log2(3), 12);
  });

  it('means over queries', () => {
    const a = scoreQuery(['a'], judged({ a: 1 }));
    const b = scoreQuery(['x'], judged({ a: 1 }));
    expect(meanOf([a, b])).toEqual({ 'ndcg@10': 0.5, 'recall@10': 0.5, 'recall@100': 0.5, 'mrr@10': 0.5 });
    expect(meanOf([])['ndcg@10']).toBe(0);
  });
});

describe('pairedRandomizationTest', () => {
  it('is exact up to 16 queries: all-positive differences give 2 / 2^n', () => {
    expect(pairedRandomizationTest([1, 1, 1, 1])).toBe(2 / 16);
    expect(pairedRandomizationTest([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])).toBe(2 / 64);
  });

  it('counts ties: [1, -1, 2] has 4 of 8 sign assignments at least as extreme', () => {
    // Sums of ±1 ±1 ±2 with |sum| >= 2: {4, 2, 2, 0, 0, -2, -2, -4} → six; observed |1 − 1 + 2| = 2.
    expect(pairedRandomizationTest([1, -1, 2])).toBe(6 / 8);
  });

  it('no difference means p = 1', () => {
    expect(pairedRandomizationTest([0, 0, 0])).toBe(1);
    expect(pairedRandomizationTest([])).toBe(1);
  });

  it('sampled beyond 16 queries, seeded: the same differences give the same p', () => {
    const diffs = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? -0.05 : 0.04));
    const p = pairedRandomizationTest(diffs);
    expect(pairedRandomizationTest(diffs)).toBe(p);
    expect(pairedRandomizationTest(diffs, { seed: 7 })).not.toBe(p);
    // Every difference positive: only the observed assignment is as extreme.
    expect(
      pairedRandomizationTest(
        Array.from({ length: 30 }, () => 0.1),
        { samples: 999 },
      ),
    ).toBe(1 / 1000);
  });

  it('a clear improvement over many queries is significant, noise is not', () => {
    const better = Array.from({ length: 100 }, (_, i) => (i % 5 === 0 ? -0.1 : 0.1));
    const noise = Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? -0.1 : 0.1));
    expect(pairedRandomizationTest(better)).toBeLessThan(0.001);
    expect(pairedRandomizationTest(noise)).toBeGreaterThan(0.5);
  });
});
