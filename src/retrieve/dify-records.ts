import type { ChunkMeta } from '../index/contract.js';
import type { SearchResponse } from './search-service.js';

/** One hit of one search, as Dify's answer needs it. */
export interface DifyHit {
  content: string;
  meta: ChunkMeta;
  score: number;
}

/** The hits of a one-query search answer, scored in [0, 1]. */
export function hitsOf(answer: SearchResponse): DifyHit[] {
  return (answer.documents[0] ?? []).map((content, i) => ({
    content,
    meta: answer.metadatas[0]?.[i] ?? ({} as ChunkMeta),
    // Every Kilde path already scores in [0, 1] (docs/dify.md): clamped only against rounding.
    score: Math.min(1, Math.max(0, answer.distances[0]?.[i] ?? 0)),
  }));
}

/**
 * Dify's `records` from the hits of one or more searches (`or`: the searches' hits united, each chunk
 * once with its best score), best first, the `k` best, those under `threshold` left out.
 */
export function recordsOf(hits: DifyHit[], k: number, threshold: number) {
  const best = new Map<string, DifyHit>();
  for (const hit of hits) {
    const key = `${hit.meta.file_id}\u0000${hit.meta.ingest_version}\u0000${hit.meta.split_id}\u0000${hit.content}`;
    const seen = best.get(key);
    if (!seen || hit.score > seen.score) best.set(key, hit);
  }
  return [...best.values()]
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .filter((hit) => hit.score >= threshold)
    .map((hit) => ({
      content: hit.content,
      score: hit.score,
      title: titleOf(hit.meta),
      metadata: { ...hit.meta },
    }));
}

/** A record's title: the document's title, else its file name, else its file id. */
function titleOf(meta: ChunkMeta): string {
  for (const v of [meta.title, meta.name, meta.source, meta.file_id])
    if (typeof v === 'string' && v) return v;
  return '';
}
