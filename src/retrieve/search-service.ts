import type { Logger } from 'pino';
import type { ChunkMeta, SearchHit } from '../index/contract.js';
import { fuseRrf } from '../index/rrf.js';
import type { ChatClient } from '../llm/chat-client.js';
import { type AgenticSettings, agenticSearch } from './agentic.js';
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
  /** `ENABLE_AGENTIC_RAG`: every search runs the agentic loop instead of the linear pipeline. */
  agentic?: AgenticSettings | undefined;
  log: Logger;
}

/** Which pipeline answered (the `x-kilde-pipeline` header and the request's log line say it). */
export type Pipeline = 'linear' | 'agentic';

export interface SearchOutcome extends SearchResponse {
  /** Every query searched. */
  queries: string[];
  pipeline: Pipeline;
  /** The agentic run, when it answered: why it stopped, its tool and LLM calls. */
  agent?: { stop: string; toolCalls: number; llmCalls: number };
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

  /** A query that found nothing in a small collection set gets the files' opening chunks. */
  async function orOpening(lists: SearchHit[][], req: SearchRequest): Promise<SearchHit[][]> {
    if (!o.opening || !lists.some((l) => l.length === 0)) return lists;
    const opening = await o.opening.load(req.collection_names, req.k);
    if (!opening) return lists;
    o.log.debug({ chunks: opening.length }, 'nothing matched in a small collection: opening chunks');
    return lists.map((l) => (l.length === 0 ? opening : l));
  }

  async function linear(req: SearchRequest): Promise<SearchOutcome> {
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
      if (info.exists) lists = await orOpening(lists, req);
      if (o.mergeResults && lists.length > 1) lists = [fuseRrf(lists, req.k)];
      metrics.search(mode, 'ok');
      o.log.debug({ mode, queries: queries.length, hits: lists.map((l) => l.length) }, 'search done');
      return { ...toLists(lists), queries, pipeline: 'linear' };
    } catch (err) {
      metrics.search(mode, 'error');
      throw err;
    }
  }

  async function agentic(req: SearchRequest, settings: AgenticSettings): Promise<SearchOutcome> {
    let mode: SearchMode | 'unknown' = 'unknown';
    try {
      const info = await o.collection.current();
      const m = searchMode(o.pipeline, info.hasSparse);
      mode = m;
      const run = await agenticSearch(
        req,
        { pipeline: o.pipeline, mode: m, exists: info.exists },
        settings,
        o.log,
      );
      // Exactly one list, whatever the number of queries: the chat platform reads list [0].
      const lists = info.exists ? await orOpening([run.hits], req) : [run.hits];
      metrics.search(mode, 'ok');
      o.log.debug(
        { mode, stop: run.stop, toolCalls: run.toolCalls, llmCalls: run.llmCalls, hits: lists[0]!.length },
        'agentic search done',
      );
      return {
        ...toLists(lists),
        queries: run.queries,
        pipeline: 'agentic',
        agent: { stop: run.stop, toolCalls: run.toolCalls, llmCalls: run.llmCalls },
      };
    } catch (err) {
      metrics.search(mode, 'error');
      throw err;
    }
  }

  return {
    /** The one search function behind `POST /search` and the MCP tool `search_knowledge`. */
    search(req: SearchRequest): Promise<SearchOutcome> {
      return o.agentic ? agentic(req, o.agentic) : linear(req);
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
