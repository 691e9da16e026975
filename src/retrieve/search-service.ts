import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock.js';
import { KildeError } from '../errors.js';
import type { ChunkMeta, SearchHit } from '../index/contract.js';
import { fuseRrf } from '../index/rrf.js';
import type { ChatClient } from '../llm/chat-client.js';
import { annotate, hitAttributes, inSpan } from '../telemetry/tracing.js';
import { type AgenticSettings, agenticSearch } from './agentic.js';
import type { CollectionState } from './collection-state.js';
import {
  type Explanation,
  type ExtraFilter,
  explanationOf,
  StageTimer,
  type Timings,
  type TracedHit,
} from './explain.js';
import type { createOpeningChunks } from './opening-chunks.js';
import { type PipelineDeps, type SearchMode, searchMode, searchOne } from './pipeline.js';
import { type ChatTurn, resolveQueries } from './query-source.js';

/** `pipeline` of a request: per-request choices among what the server has configured. */
export interface PipelineToggles {
  hybrid?: boolean | undefined;
  rerank?: boolean | undefined;
  agentic?: boolean | undefined;
}

export interface SearchRequest {
  queries?: string[] | undefined;
  messages?: ChatTurn[] | undefined;
  collection_names: string[];
  k: number;
  /** Kilde extension: AND-ed with the tenant filter inside the index query. */
  filter?: ExtraFilter | undefined;
  /** Kilde extension: per-request toggles (asking for one the server lacks: 400 INVALID_REQUEST). */
  pipeline?: PipelineToggles | undefined;
  /** Kilde extension: per-hit explanations and stage timings. */
  explain?: boolean | undefined;
  /**
   * `false`: a query that finds nothing answers nothing, never the opening chunks of a small
   * collection (Dify asks for matches, not for a file to summarise). Default: the opening chunks.
   */
  opening?: boolean | undefined;
}

/** The search modes a request may choose among (`GET /api/v1/info`, `pipeline` of a request). */
export interface ModesAvailable {
  hybrid: boolean;
  rerank: boolean;
  agentic: boolean;
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
  /** Stage timings of `explain` are measured on it (tests pass a manual clock). */
  clock?: Clock | undefined;
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
  /** With `explain`: one explanation per hit, parallel to `documents`. */
  explanations?: Explanation[][];
  /** With `explain`: milliseconds per stage. */
  timings_ms?: Timings;
}

const NOT_CONFIGURED: Record<keyof ModesAvailable, string> = {
  hybrid: 'set ENABLE_HYBRID_SEARCH=true with a dense embedder',
  rerank: 'set ENABLE_RERANKING=true and RERANK_API_BASE_URL',
  agentic: 'set ENABLE_AGENTIC_RAG=true',
};

/**
 * MERGE_QUERY_RESULTS: every query's list fused into one by RRF; each hit keeps the trace of its
 * first occurrence, with the merged score as its fused score.
 */
function mergeLists(lists: TracedHit[][], k: number): TracedHit[] {
  const traces = new Map<string, TracedHit['trace']>();
  for (const list of lists) for (const h of list) if (!traces.has(h.id)) traces.set(h.id, h.trace);
  return fuseRrf(lists, k).map((h) => {
    const trace = traces.get(h.id);
    return trace ? { ...h, trace: { ...trace, fused: h.score } } : h;
  });
}

/** Whether a request has any text to search: a non-blank query, or a user message with text. */
function searchable(req: SearchRequest): boolean {
  if ((req.queries ?? []).some((q) => q.trim().length > 0)) return true;
  return (req.messages ?? []).some((m) => m.role === 'user' && m.content.trim().length > 0);
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
  async function orOpening(lists: TracedHit[][], req: SearchRequest): Promise<TracedHit[][]> {
    if (!o.opening || req.opening === false || !lists.some((l) => l.length === 0)) return lists;
    const loaded = await o.opening.load(req.collection_names, req.k, req.filter);
    if (!loaded) return lists;
    o.log.debug({ chunks: loaded.length }, 'nothing matched in a small collection: opening chunks');
    const opening: TracedHit[] = req.explain
      ? loaded.map((h) => ({
          ...h,
          trace: { path: 'fallback', dense: null, lexical: null, fused: null, rerank: null },
        }))
      : loaded;
    return lists.map((l) => (l.length === 0 ? opening : l));
  }

  /** What the server offers a request to choose among. */
  function modesAvailable(): ModesAvailable {
    return {
      hybrid: o.pipeline.hybrid && o.pipeline.dense !== undefined,
      rerank: o.pipeline.reranker !== undefined,
      agentic: o.agentic !== undefined,
    };
  }

  /** The request's pipeline: the server's, narrowed by its toggles; asking for more is refused. */
  function chosen(req: SearchRequest): { deps: PipelineDeps; agentic: AgenticSettings | undefined } {
    const toggles = req.pipeline ?? {};
    const available = modesAvailable();
    for (const key of ['hybrid', 'rerank', 'agentic'] as const) {
      if (toggles[key] === true && !available[key]) {
        throw new KildeError(
          'INVALID_REQUEST',
          `pipeline.${key} is not configured on this server (${NOT_CONFIGURED[key]})`,
        );
      }
    }
    let deps = o.pipeline;
    if (toggles.hybrid === false) deps = { ...deps, hybrid: false };
    if (toggles.rerank === false) deps = { ...deps, reranker: undefined };
    return { deps, agentic: toggles.agentic === false ? undefined : o.agentic };
  }

  /** The explanations and timings of an answer, when asked for. */
  function explained(lists: TracedHit[][], timer: StageTimer | undefined) {
    if (!timer) return {};
    return { explanations: lists.map((l) => l.map(explanationOf)), timings_ms: timer.result() };
  }

  async function linear(req: SearchRequest, deps: PipelineDeps, timer?: StageTimer): Promise<SearchOutcome> {
    const { queries } = await metrics.time('generate', () => {
      const resolve = () =>
        inSpan('kilde.search.queries', {}, async (span) => {
          const resolved = await resolveQueries(req, {
            llm: o.llm,
            generate: o.generateQueries,
            lastMessages: o.lastMessages,
            maxQueries: o.maxQueries,
            log: o.log,
            onFallback: () => metrics.fallback('query_generation'),
          });
          span?.setAttribute('kilde.queries.count', resolved.queries.length);
          return resolved;
        });
      return timer ? timer.time('queries', resolve) : resolve();
    });
    let mode: SearchMode | 'unknown' = 'unknown';
    try {
      const info = await o.collection.current();
      const m = searchMode(deps, info.hasSparse);
      mode = m;
      const options = { filter: req.filter, explain: req.explain, timer };
      // Nothing ingested yet: empty lists (as for an unknown collection name), not an error.
      const results = info.exists
        ? await Promise.all(queries.map((q) => searchOne(deps, m, q, req.collection_names, req.k, options)))
        : queries.map(() => ({ hits: [] as TracedHit[] }));
      let lists = results.map((r) => r.hits);
      if (info.exists) lists = await orOpening(lists, req);
      if (o.mergeResults && lists.length > 1) lists = [mergeLists(lists, req.k)];
      metrics.search(mode, 'ok');
      o.log.debug({ mode, queries: queries.length, hits: lists.map((l) => l.length) }, 'search done');
      return { ...toLists(lists), queries, pipeline: 'linear', ...explained(lists, timer) };
    } catch (err) {
      metrics.search(mode, 'error');
      throw err;
    }
  }

  async function agentic(
    req: SearchRequest,
    deps: PipelineDeps,
    settings: AgenticSettings,
    timer?: StageTimer,
  ): Promise<SearchOutcome> {
    let mode: SearchMode | 'unknown' = 'unknown';
    try {
      const info = await o.collection.current();
      const m = searchMode(deps, info.hasSparse);
      mode = m;
      const runAgent = () =>
        inSpan(
          'kilde.search.agent',
          { 'kilde.search.mode': m, 'kilde.collections': req.collection_names, 'kilde.search.k': req.k },
          async (span) => {
            const ran = await agenticSearch(
              { ...req, search: { filter: req.filter, explain: req.explain, timer } },
              { pipeline: deps, mode: m, exists: info.exists },
              settings,
              o.log,
            );
            annotate(span, {
              'kilde.agent.stop': ran.stop,
              'kilde.agent.tool_calls': ran.toolCalls,
              'kilde.agent.llm_calls': ran.llmCalls,
              'kilde.queries.count': ran.queries.length,
            });
            span?.setAttributes(hitAttributes(ran.hits));
            return ran;
          },
        );
      const run = await (timer ? timer.time('agent', runAgent) : runAgent());
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
        ...explained(lists, timer),
      };
    } catch (err) {
      metrics.search(mode, 'error');
      throw err;
    }
  }

  return {
    /** The one search function behind `POST /search` and the MCP tool `search_knowledge`. */
    async search(req: SearchRequest): Promise<SearchOutcome> {
      const { deps, agentic: settings } = chosen(req);
      const timer = req.explain ? new StageTimer(() => (o.clock ?? systemClock).now()) : undefined;
      // A turn with nothing to search (an image alone: Open WebUI sends `queries: [""]`; Dify an
      // empty query) finds nothing: one empty list, as for an unknown collection, not an error.
      if (!searchable(req)) {
        return { ...toLists([[]]), queries: [], pipeline: 'linear', ...explained([[]], timer) };
      }
      return settings ? agentic(req, deps, settings, timer) : linear(req, deps, timer);
    },
    /** The modes a request may choose among (`GET /api/v1/info`). */
    modesAvailable,
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
