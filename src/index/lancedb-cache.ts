/**
 * What the process's LanceDB sessions hold (lancedb-session.ts makes them). Kept apart from that
 * module so that `/metrics` can report it without loading LanceDB where the index is Qdrant.
 */
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
