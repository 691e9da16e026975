import type { SearchHit } from './contract.js';

/** The constant of Cormack et al.'s reciprocal rank fusion; damps the weight of the very top ranks. */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each list adds 1 / (k + rank) (rank 1-based) to a hit's score. Scores are
 * raw RRF sums, not normalised: hybrid search answers raw fusion scores (higher is still better);
 * ties keep first-seen order.
 */
export function fuseRrf(lists: readonly (readonly SearchHit[])[], limit: number, k = RRF_K): SearchHit[] {
  const fused = new Map<string, SearchHit>();
  for (const list of lists) {
    list.forEach((hit, index) => {
      const add = 1 / (k + index + 1);
      const seen = fused.get(hit.id);
      if (seen) seen.score += add;
      else fused.set(hit.id, { id: hit.id, content: hit.content, meta: hit.meta, score: add });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score).slice(0, Math.max(0, limit));
}
