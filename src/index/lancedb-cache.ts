/**
 * The bounds of LanceDB's caches, and what the process's LanceDB sessions hold (lancedb-session.ts
 * makes them). Kept apart from that module so that the configuration and `/metrics` can use them
 * without loading LanceDB where the index is Qdrant.
 */
export interface LanceCacheMb {
  /** Index data: dense vector index, full-text and scalar indexes (`LANCEDB_INDEX_CACHE_MB`). */
  index: number;
  /** Manifests and file metadata (`LANCEDB_METADATA_CACHE_MB`). */
  metadata: number;
}

/** The configuration's defaults with dense embeddings (and for callers that open an index without a configuration). */
export const DEFAULT_CACHE_MB: LanceCacheMb = { index: 512, metadata: 64 };

/** The defaults without dense embeddings: the full-text and scalar indexes need far less. */
export const LEXICAL_CACHE_MB: LanceCacheMb = { index: 256, metadata: 64 };

/** The bounds when the configuration leaves them unset: the index cache sized for a dense index when there is one. */
export function defaultCacheMb(dense: boolean): LanceCacheMb {
  return dense ? DEFAULT_CACHE_MB : LEXICAL_CACHE_MB;
}

export interface CacheHolder {
  sizeBytes(): bigint;
  approxNumItems(): number;
}

const holders = new Set<CacheHolder>();

export function trackCache(holder: CacheHolder): void {
  holders.add(holder);
}

/** Bytes and entries in every LanceDB session of the process (0 when none is open). */
export function lanceCacheUsage(): { bytes: number; items: number } {
  let bytes = 0;
  let items = 0;
  for (const h of holders) {
    bytes += Number(h.sizeBytes());
    items += h.approxNumItems();
  }
  return { bytes, items };
}
