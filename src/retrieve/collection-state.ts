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
  now?: () => number;
}

/**
 * What the collection looks like now, as the search mode needs it (exists? has a lexical side?).
 * The ingestion service may create the collection, or its sparse/full-text side, after retrieval
 * started (two processes, one index): a missing collection is therefore re-described on every
 * search, an existing one every `refreshMs` (`partialRefreshMs` while it lacks a lexical side).
 * Concurrent searches share one describe call.
 */
export function createCollectionState(o: CollectionStateOptions) {
  const now = o.now ?? Date.now;
  let known: { at: number; info: CollectionInfo } | undefined;
  let pending: Promise<CollectionInfo> | undefined;
  return {
    current(): Promise<CollectionInfo> {
      if (known?.info.exists) {
        const trust = known.info.hasSparse ? o.refreshMs : o.partialRefreshMs;
        if (now() - known.at < trust) return Promise.resolve(known.info);
      }
      pending ??= o.index
        .describe()
        .then((info) => {
          known = { at: now(), info };
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
