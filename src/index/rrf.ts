import type { SearchHit } from './contract.js';

/** The constant of Cormack et al.'s reciprocal rank fusion; damps the weight of the very top ranks. */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each list adds 1 / (k + rank) (rank 1-based) to a hit's score, and the sum
 * is divided by its largest possible value, lists / (k + 1), so scores lie in [0, 1] (1: first in
 * every list) with the raw RRF order unchanged. Ties keep first-seen order.
 */
export function fuseRrf(lists: readonly (readonly SearchHit[])[], limit: number, k = RRF_K): SearchHit[] {
  const fused = new Map<string, SearchHit>();
  const scale = (k + 1) / Math.max(1, lists.length);
  for (const list of lists) {
    list.forEach((hit, index) => {
      const add = scale / (k + index + 1);
      const seen = fused.get(hit.id);
      if (seen) seen.score += add;
      else fused.set(hit.id, { id: hit.id, content: hit.content, meta: hit.meta, score: add });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score).slice(0, Math.max(0, limit));
}
