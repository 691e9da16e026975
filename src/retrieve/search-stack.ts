import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type Clock, systemClock } from '../clock.js';
import type { SearchSettings } from '../config/retrieve.js';
import { LexicalAnalyzer } from '../embed/bm25/analysis.js';
import { createDenseEmbedder } from '../embed/create-dense.js';
import { createSparseEncoder } from '../embed/create-sparse.js';
import { describeCause } from '../errors.js';
import type { Probe } from '../http/health.js';
import { checkDenseUsable } from '../index/dense-check.js';
import { openIndex } from '../index/open.js';
import { indexSettingsFrom } from '../index/settings-from-config.js';
import type { VectorIndex } from '../index/store.js';
import { createAgentModel } from '../llm/agent-model.js';
import { createChatClient } from '../llm/chat-client.js';
import type { AgenticSettings } from './agentic.js';
import { createCollectionState } from './collection-state.js';
import { createCorpusCache } from './corpus-cache.js';
import { createRetrieveMetrics } from './metrics.js';
import { createOpeningChunks } from './opening-chunks.js';
import { createQueryLexical } from './query-lexical.js';
import { createReranker } from './rerank.js';
import { createSearchService, type SearchService } from './search-service.js';
import { checkIndexSettings } from './settings-check.js';

export interface SearchStackDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** The agentic loop's deadline (`AGENT_TIMEOUT`) runs on it; tests pass a manual clock. */
  clock?: Clock;
  /** Tests and `serve all` pass an already open index; otherwise the stack opens (and closes) its own. */
  index?: VectorIndex;
}

/**
 * How long the collection's description (exists, lexical side) is trusted before a search re-reads
 * it; short, so a collection the ingestion process creates or reshapes is picked up without restarts.
 */
const COLLECTION_REFRESH_MS = 10_000;

/**
 * Everything a search needs, built once per process from the search settings: the index (read-only
 * use), the embedders, the reranker, the LLM client of query generation and the agent's model. Both
 * `POST /search` (retrieve part) and the MCP tool `search_knowledge` (knowledge part) take their
 * service from here: on one app they get the very same service object, so they cannot differ.
 */
export async function createSearchStack(config: SearchSettings, deps: SearchStackDeps) {
  const log = deps.log.child({ service: 'retrieve' });
  const net = deps.fetch ? { fetch: deps.fetch } : {};
  const index =
    deps.index ?? (await openIndex(indexSettingsFrom(config, config.ENABLE_HYBRID_SEARCH), { log, ...net }));
  const ownsIndex = deps.index === undefined;
  const dense = createDenseEmbedder(config, { log, ...net });
  // Refuses an unknown SPARSE_QUERY_MODEL at start-up; queries are analysed by `analyzer`.
  createSparseEncoder(config.SPARSE_QUERY_MODEL, config.SPARSE_LANGUAGE);
  const analyzer = new LexicalAnalyzer(config.SPARSE_LANGUAGE);
  const reranker =
    config.ENABLE_RERANKING && config.RERANK_API_BASE_URL
      ? createReranker({
          baseUrl: config.RERANK_API_BASE_URL,
          model: config.RERANK_MODEL,
          apiKey: config.RERANK_API_KEY,
          timeoutMs: config.RERANK_TIMEOUT * 1000,
          ...net,
        })
      : undefined;
  if (config.ENABLE_RERANKING && !reranker)
    log.warn('ENABLE_RERANKING=true but RERANK_API_BASE_URL is unset: reranking is off');
  if (!dense)
    log.warn(
      'lexical-only search (EMBEDDING_PROVIDER=none): set EMBEDDING_PROVIDER, EMBEDDING_MODEL, EMBEDDING_DIM and EMBEDDING_API_BASE_URL to enable dense search',
    );

  // Query generation sits in front of every chat search: its own short time-out, then the fallback.
  const llm = config.ENABLE_QUERY_GENERATION
    ? createChatClient({
        baseUrl: config.AGENT_API_BASE_URL,
        apiKey: config.AGENT_API_KEY,
        model: config.AGENT_MODEL,
        timeoutMs: Math.min(config.QUERY_GENERATION_TIMEOUT, config.AGENT_TIMEOUT) * 1000,
        ...net,
        ...(deps.clock ? { clock: deps.clock } : {}),
      })
    : undefined;

  const agentic: AgenticSettings | undefined = config.ENABLE_AGENTIC_RAG
    ? {
        model: createAgentModel({
          baseUrl: config.AGENT_API_BASE_URL,
          apiKey: config.AGENT_API_KEY,
          model: config.AGENT_MODEL,
          ...net,
        }),
        strictTools: config.AGENT_STRICT_TOOLS,
        maxIterations: config.AGENT_MAX_ITERATIONS,
        maxTokens: config.AGENT_MAX_TOKENS,
        timeoutMs: config.AGENT_TIMEOUT * 1000,
        includeRawQuery: config.AGENT_INCLUDE_RAW_QUERY,
        historyMessages: config.AGENT_CONVERSATION_HISTORY_MESSAGES,
        previewK: config.AGENT_PREVIEW_K,
        previewChars: config.AGENT_TOOL_PREVIEW_CHARS,
        clock: deps.clock ?? systemClock,
      }
    : undefined;
  if (agentic) {
    log.info(
      {
        model: config.AGENT_MODEL,
        maxIterations: agentic.maxIterations,
        timeoutS: config.AGENT_TIMEOUT,
        maxTokens: agentic.maxTokens,
        strictTools: agentic.strictTools,
      },
      'agentic retrieval: POST /search runs the tool-calling loop',
    );
  }

  const services = new WeakMap<Registry, SearchService>();
  let started: Promise<unknown> | undefined;
  const probes: Probe[] = [
    {
      name: 'index',
      timeoutMs: 3000,
      check: async (signal) => {
        await index.ping(signal).catch((err: unknown) => {
          throw new Error(describeCause(err));
        });
        // Reachable is not enough: with a dense size the collection cannot take, every search fails.
        await checkDenseUsable(index, config);
      },
    },
  ];

  return {
    index,
    probes,
    /** The app's one search service, made on first use with the app's metrics registry. */
    service(registry: Registry): SearchService {
      let service = services.get(registry);
      if (!service) {
        const collection = createCollectionState({
          index,
          refreshMs: COLLECTION_REFRESH_MS,
          partialRefreshMs: 1000,
        });
        service = createSearchService({
          pipeline: {
            index,
            dense,
            lexical: createQueryLexical({ index, analyzer, collection, refreshMs: COLLECTION_REFRESH_MS }),
            hybrid: config.ENABLE_HYBRID_SEARCH,
            reranker,
            multiplier: config.INITIAL_RETRIEVAL_MULTIPLIER,
            corpus: createCorpusCache({
              index,
              analyzer,
              maxDocs: config.BM25_FUSION_MAX_DOCS,
              ttlMs: config.BM25_FUSION_CACHE_TTL * 1000,
              log,
            }),
            metrics: createRetrieveMetrics(registry),
            log,
          },
          collection,
          llm,
          generateQueries: config.ENABLE_QUERY_GENERATION,
          lastMessages: config.QUERY_GENERATION_MESSAGES,
          maxQueries: config.QUERY_GENERATION_MAX_QUERIES,
          mergeResults: config.MERGE_QUERY_RESULTS,
          opening: createOpeningChunks(index, config.SMALL_COLLECTION_CHUNKS),
          agentic,
          clock: deps.clock,
          log,
        });
        services.set(registry, service);
      }
      return service;
    },
    /** Start-up checks of the collection against the settings; run once however many parts ask. */
    async start(): Promise<void> {
      started ??= checkIndexSettings(index, config, log);
      await started;
    },
    async close(): Promise<void> {
      await dense?.close?.();
      if (ownsIndex) await index.close();
    },
  };
}

export type SearchStack = Awaited<ReturnType<typeof createSearchStack>>;
