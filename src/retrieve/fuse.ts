import { createHash } from 'node:crypto';
import type { SearchHit } from '../index/contract.js';

export function contentHash(content: string): string {
  return createHash('md5').update(content, 'utf8').digest('hex');
}

/** Keeps the first (best) hit of each distinct content (MD5), then limits to k. */
export function dedupByContent<T extends SearchHit>(hits: readonly T[], k: number): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const hit of hits) {
    const h = contentHash(hit.content);
    if (seen.has(h)) continue;
    seen.add(h);
    out.push(hit);
    if (out.length === k) break;
  }
  return out;
}
