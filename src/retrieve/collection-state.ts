import type { CollectionInfo, VectorIndex } from '../index/store.js';

export interface CollectionStateOptions {
  index: VectorIndex;
  /** How long a description of an existing collection is trusted. */
  refreshMs: number;
  now?: () => number;
}

/**
 * What the collection looks like now, as the search mode needs it (exists? has a lexical side?).
 * The ingestion service may create the collection, or its sparse/full-text side, after retrieval
 * started (two processes, one index): a missing collection is therefore re-described on every
 * search, an existing one every `refreshMs`. Concurrent searches share one describe call.
 */
export function createCollectionState(o: CollectionStateOptions) {
  const now = o.now ?? Date.now;
  let known: { at: number; info: CollectionInfo } | undefined;
  let pending: Promise<CollectionInfo> | undefined;
  return {
    current(): Promise<CollectionInfo> {
      if (known?.info.exists && now() - known.at < o.refreshMs) return Promise.resolve(known.info);
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
