import { describe, expect, it } from 'vitest';
import { breadcrumbHas, scoreRanking, sectionOf } from '../../bench/quality-metrics.js';

describe('bench:quality measures', () => {
  it('nDCG@k with graded gains and the ideal ranking from the qrels, as trec_eval ndcg_cut', () => {
    const rel = new Map([
      ['a', 2],
      ['b', 1],
    ]);
    expect(scoreRanking(['a', 'b', 'x'], rel, 10)).toEqual({ ndcg: 1, recall: 1, mrr: 1 });
    const s = scoreRanking(['x', 'b', 'a'], rel, 10);
    const dcg = 1 / Math.log2(3) + 2 / Math.log2(4);
    const idcg = 2 / Math.log2(2) + 1 / Math.log2(3);
    expect(s.ndcg).toBeCloseTo(dcg / idcg, 12);
    expect(s.mrr).toBe(0.5);
    // Cut at k: a relevant document below rank k counts for nothing.
    expect(scoreRanking(['x', 'y', 'a'], rel, 2)).toEqual({ ndcg: 0, recall: 0, mrr: 0 });
    expect(scoreRanking(['x', 'a'], rel, 2).recall).toBe(0.5);
  });

  it('a breadcrumb names a section only by an exact heading number', () => {
    expect(sectionOf('1.9.2 Den Spanske Syge')).toBe('1.9.2');
    expect(sectionOf('1.9. Verdenskrig')).toBe('1.9');
    expect(sectionOf('Grønlands kulturliv')).toBeUndefined();
    const meta = {
      headers: ['1.9 Verdenskrig, kriser og socialreformer (1914-40)', '1.9.2 Den Spanske Syge'],
    };
    expect(breadcrumbHas(meta as never, '1.9.2')).toBe(true);
    expect(breadcrumbHas(meta as never, '1.9')).toBe(true);
    expect(breadcrumbHas(meta as never, '1.9.1')).toBe(false);
    expect(breadcrumbHas(meta as never, '1.1')).toBe(false);
    expect(breadcrumbHas(undefined, '1.9')).toBe(false);
  });
});
