import { describe, expect, it } from 'vitest';
import { packRuns } from '../src/pack.js';

describe('packRuns', () => {
  const size = (n: number) => n;

  it('cuts consecutive items at the weight limit, keeping their order', () => {
    expect(packRuns([3, 3, 3, 1, 4], size, { maxWeight: 7 })).toEqual([[3, 3], [3, 1], [4]]);
  });

  it('cuts at the item limit too', () => {
    expect(packRuns([1, 1, 1, 1, 1], size, { maxWeight: 100, maxItems: 2 })).toEqual([[1, 1], [1, 1], [1]]);
  });

  it('puts an item heavier than the limit in a run alone', () => {
    expect(packRuns([1, 9, 1], size, { maxWeight: 5 })).toEqual([[1], [9], [1]]);
  });

  it('weighs each item once, with its index', () => {
    const seen: number[] = [];
    const weigh = (_: string, i: number) => {
      seen.push(i);
      return 2;
    };
    const runs = packRuns(['a', 'b', 'c'], weigh, { maxWeight: 4 });
    expect(runs).toEqual([['a', 'b'], ['c']]);
    expect(seen).toEqual([0, 1, 2]);
  });

  it('makes no run of nothing', () => {
    expect(packRuns([], size, { maxWeight: 1 })).toEqual([]);
  });
});
