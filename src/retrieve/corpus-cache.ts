import type { Logger } from 'pino';
import type { LexicalAnalyzer } from '../embed/bm25/analysis.js';
import type { IndexFilter, StoredPoint } from '../index/contract.js';
import type { VectorIndex } from '../index/store.js';
import { Bm25Corpus } from './client-bm25.js';
import type { ExtraFilter } from './explain.js';

export interface CorpusCacheOptions {
  index: VectorIndex;
  analyzer: LexicalAnalyzer;
  /** Most chunks held per collection set. */
  maxDocs: number;
  ttlMs: number;
  /** Most corpora held at once (least recently used evicted), so many tenants cannot exhaust memory. */
  maxEntries?: number;
  now?: () => number;
  log?: Logger;
}

/**
 * Client-side BM25 corpora per collection set, scrolled from the index (filtered to the tenant's
 * collections), capped and kept for a TTL so a burst of searches scrolls once.
 */
export function createCorpusCache(o: CorpusCacheOptions) {
  const now = o.now ?? Date.now;
  const entries = new Map<
    string,
    { at: number; corpus: Promise<{ corpus: Bm25Corpus; truncated: boolean }> }
  >();

  async function load(filter: IndexFilter) {
    const points: StoredPoint[] = [];
    let cursor: string | undefined;
    do {
      const page = await o.index.scroll(filter, {
        limit: Math.min(1000, o.maxDocs - points.length),
        ...(cursor === undefined ? {} : { cursor }),
      });
      points.push(...page.points);
      cursor = page.next;
    } while (cursor !== undefined && points.length < o.maxDocs);
    const truncated = cursor !== undefined;
    if (truncated) {
      // Lexical hits beyond the cap are invisible: the operator should add text-sparse instead.
      o.log?.warn(
        { collections: filter.collectionNames, maxDocs: o.maxDocs },
        'client-side BM25 corpus capped at BM25_FUSION_MAX_DOCS chunks; lexical matches beyond it are missed',
      );
    }
    return { corpus: new Bm25Corpus(points, o.analyzer), truncated };
  }

  return {
    /** The corpus of the collections, narrowed by a request's filter (part of the cache key). */
    get(collectionNames: readonly string[], extra: ExtraFilter = {}) {
      const key = `${[...new Set(collectionNames)].sort().join('\u0000')}\u0000${JSON.stringify(extra)}`;
      const hit = entries.get(key);
      if (hit && now() - hit.at < o.ttlMs) {
        // Map order doubles as recency order.
        entries.delete(key);
        entries.set(key, hit);
        return hit.corpus;
      }
      const corpus = load({ ...extra, collectionNames });
      entries.delete(key);
      entries.set(key, { at: now(), corpus });
      corpus.catch(() => entries.delete(key));
      for (const [k, e] of entries) if (now() - e.at >= o.ttlMs) entries.delete(k);
      const max = o.maxEntries ?? 16;
      for (const k of entries.keys()) {
        if (entries.size <= max) break;
        entries.delete(k);
      }
      return corpus;
    },
  };
}
