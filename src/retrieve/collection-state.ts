import type { CollectionInfo, VectorIndex } from '../index/store.js';

export interface CollectionStateOptions {
  index: VectorIndex;
  /** How long a description of an existing collection with a lexical side is trusted. */
  refreshMs: number;
  /**
   * How long one without a lexical side is trusted: the ingestion side creates the table first and
   * its full-text index a moment later, and a search in between must not pin the fallback mode.
   */
  partialRefreshMs: number;
  /**
   * After a write from this process (`VectorIndex.writeEpoch` moved), a description at least this
   * old is read again, so a collection or full-text index this process just created is seen by the
   * next search. Default 1000; 0 re-reads on the first search after every write.
   */
  writeRefreshMs?: number;
  now?: () => number;
}

/**
 * What the collection looks like now, as the search mode needs it (exists? has a lexical side?).
 * The ingestion service may create the collection, or its sparse/full-text side, after retrieval
 * started (two processes, one index): a missing collection is therefore re-described on every
 * search, an existing one every `refreshMs` (`partialRefreshMs` while it lacks a lexical side),
 * and sooner after a write from this process (`writeRefreshMs`). A search between two refreshes
 * makes no call to the index for it. Concurrent searches share one describe call.
 */
export function createCollectionState(o: CollectionStateOptions) {
  const now = o.now ?? Date.now;
  const epoch = () => o.index.writeEpoch?.() ?? 0;
  let known: { at: number; epoch: number; info: CollectionInfo } | undefined;
  let pending: Promise<CollectionInfo> | undefined;
  return {
    current(): Promise<CollectionInfo> {
      if (known?.info.exists) {
        const age = now() - known.at;
        const trust = known.info.hasSparse ? o.refreshMs : o.partialRefreshMs;
        const written = known.epoch !== epoch() && age >= (o.writeRefreshMs ?? 1000);
        if (age < trust && !written) return Promise.resolve(known.info);
      }
      // Read before describing: a write landing meanwhile leaves the entry stale, to be read again.
      const at = epoch();
      pending ??= o.index
        .describe()
        .then((info) => {
          known = { at: now(), epoch: at, info };
          return info;
        })
        .finally(() => {
          pending = undefined;
        });
      return pending;
    },
  };
}

export type CollectionState = ReturnType<typeof createCollectionState>;
