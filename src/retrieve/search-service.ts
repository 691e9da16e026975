import type { Logger } from 'pino';
import type { ChunkMeta, SearchHit } from '../index/contract.js';
import { fuseRrf } from '../index/rrf.js';
import type { ChatClient } from '../llm/chat-client.js';
import type { CollectionState } from './collection-state.js';
import type { createOpeningChunks } from './opening-chunks.js';
import { type PipelineDeps, type SearchMode, searchMode, searchOne } from './pipeline.js';
import { type ChatTurn, resolveQueries } from './query-source.js';

export interface SearchRequest {
  queries?: string[] | undefined;
  messages?: ChatTurn[] | undefined;
  collection_names: string[];
  k: number;
}

/** The chat platform's shape: one inner list per query, parallel and of equal length. */
export interface SearchResponse {
  documents: string[][];
  metadatas: ChunkMeta[][];
  distances: number[][];
}

export interface SearchServiceOptions {
  pipeline: PipelineDeps;
  collection: CollectionState;
  llm?: ChatClient | undefined;
  generateQueries: boolean;
  lastMessages: number;
  maxQueries: number;
  mergeResults: boolean;
  /** Answers a query that found nothing in a small collection set with the files' opening chunks. */
  opening?: ReturnType<typeof createOpeningChunks> | undefined;
  log: Logger;
}

function toLists(lists: SearchHit[][]): SearchResponse {
  return {
    documents: lists.map((l) => l.map((h) => h.content)),
    metadatas: lists.map((l) => l.map((h) => h.meta)),
    distances: lists.map((l) => l.map((h) => h.score)),
  };
}

export function createSearchService(o: SearchServiceOptions) {
  const { metrics } = o.pipeline;
  return {
    async search(req: SearchRequest): Promise<SearchResponse & { queries: string[] }> {
      const { queries } = await metrics.time('generate', () =>
        resolveQueries(req, {
          llm: o.llm,
          generate: o.generateQueries,
          lastMessages: o.lastMessages,
          maxQueries: o.maxQueries,
          log: o.log,
          onFallback: () => metrics.fallback('query_generation'),
        }),
      );
      let mode: SearchMode | 'unknown' = 'unknown';
      try {
        const info = await o.collection.current();
        const m = searchMode(o.pipeline, info.hasSparse);
        mode = m;
        // Nothing ingested yet: empty lists (as for an unknown collection name), not an error.
        const results = info.exists
          ? await Promise.all(queries.map((q) => searchOne(o.pipeline, m, q, req.collection_names, req.k)))
          : queries.map(() => ({ hits: [] as SearchHit[] }));
        let lists = results.map((r) => r.hits);
        if (o.opening && info.exists && lists.some((l) => l.length === 0)) {
          const opening = await o.opening.load(req.collection_names, req.k);
          if (opening) {
            lists = lists.map((l) => (l.length === 0 ? opening : l));
            o.log.debug({ chunks: opening.length }, 'nothing matched in a small collection: opening chunks');
          }
        }
        if (o.mergeResults && lists.length > 1) lists = [fuseRrf(lists, req.k)];
        metrics.search(mode, 'ok');
        o.log.debug({ mode, queries: queries.length, hits: lists.map((l) => l.length) }, 'search done');
        return { ...toLists(lists), queries };
      } catch (err) {
        metrics.search(mode, 'error');
        throw err;
      }
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
