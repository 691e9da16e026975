import { createHash } from 'node:crypto';
import type { SearchHit } from '../index/contract.js';

/** The usual RRF constant (Qdrant and LanceDB use 60 too). */
export const RRF_K = 60;

/** Reciprocal rank fusion of ranked lists, keyed by point id; scores are the raw RRF sums. */
export function rrfFuse(lists: readonly (readonly SearchHit[])[], limit: number, k = RRF_K): SearchHit[] {
  const fused = new Map<string, SearchHit>();
  for (const list of lists) {
    list.forEach((hit, rank) => {
      const add = 1 / (k + rank + 1);
      const seen = fused.get(hit.id);
      if (seen) seen.score += add;
      else fused.set(hit.id, { ...hit, score: add });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score).slice(0, limit);
}

export function contentHash(content: string): string {
  return createHash('md5').update(content, 'utf8').digest('hex');
}

/** Keeps the first (best) hit of each distinct content (MD5), then limits to k. */
export function dedupByContent(hits: readonly SearchHit[], k: number): SearchHit[] {
  const seen = new Set<string>();
  const out: SearchHit[] = [];
  for (const hit of hits) {
    const h = contentHash(hit.content);
    if (seen.has(h)) continue;
    seen.add(h);
    out.push(hit);
    if (out.length === k) break;
  }
  return out;
}
