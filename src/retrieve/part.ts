import type { Logger } from 'pino';
import type { RetrieveConfig } from '../config/retrieve.js';
import { createDenseEmbedder } from '../embed/create-dense.js';
import { createSparseEncoder } from '../embed/create-sparse.js';
import { describeCause } from '../errors.js';
import type { ServicePart } from '../http/app.js';
import { checkDenseUsable } from '../index/dense-check.js';
import { openIndex } from '../index/open.js';
import { indexSettingsFrom } from '../index/settings-from-config.js';
import type { VectorIndex } from '../index/store.js';
import { createChatClient } from '../llm/chat-client.js';
import { createCollectionState } from './collection-state.js';
import { createCorpusCache } from './corpus-cache.js';
import { createRetrieveMetrics } from './metrics.js';
import { createOpeningChunks } from './opening-chunks.js';
import { createReranker } from './rerank.js';
import { registerSearchRoutes } from './routes.js';
import { createSearchService } from './search-service.js';
import { checkIndexSettings } from './settings-check.js';

export interface RetrieveDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** Tests and `serve all` pass an already open index. */
  index?: VectorIndex;
}

/**
 * How long the collection's description (exists, lexical side) is trusted before a search re-reads
 * it; short, so a collection the ingestion process creates or reshapes is picked up without restarts.
 */
const COLLECTION_REFRESH_MS = 10_000;

/** The retrieval service: `POST /search` over the shared index (read-only). */
export async function createRetrievePart(config: RetrieveConfig, deps: RetrieveDeps): Promise<ServicePart> {
  const log = deps.log.child({ service: 'retrieve' });
  const net = deps.fetch ? { fetch: deps.fetch } : {};
  const index =
    deps.index ?? (await openIndex(indexSettingsFrom(config, config.ENABLE_HYBRID_SEARCH), { log, ...net }));
  const ownsIndex = deps.index === undefined;
  const dense = createDenseEmbedder(config, { log, ...net });
  const sparse = createSparseEncoder(config.SPARSE_QUERY_MODEL, config.SPARSE_LANGUAGE);
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
  if (config.ENABLE_AGENTIC_RAG)
    log.warn('ENABLE_AGENTIC_RAG=true: the agentic loop is not in this build; the linear pipeline runs');
  if (!dense)
    log.warn(
      'lexical-only search (EMBEDDING_PROVIDER=none): set EMBEDDING_PROVIDER, EMBEDDING_MODEL, EMBEDDING_DIM and EMBEDDING_API_BASE_URL to enable dense search',
    );

  const llm = config.ENABLE_QUERY_GENERATION
    ? createChatClient({
        baseUrl: config.AGENT_API_BASE_URL,
        apiKey: config.AGENT_API_KEY,
        model: config.AGENT_MODEL,
        timeoutMs: config.AGENT_TIMEOUT * 1000,
        ...net,
      })
    : undefined;

  let service: ReturnType<typeof createSearchService> | undefined;
  return {
    name: 'retrieve',
    probes: [
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
    ],
    register(app, ctx) {
      const metrics = createRetrieveMetrics(ctx.metrics);
      service = createSearchService({
        pipeline: {
          index,
          dense,
          sparse,
          hybrid: config.ENABLE_HYBRID_SEARCH,
          reranker,
          multiplier: config.INITIAL_RETRIEVAL_MULTIPLIER,
          corpus: createCorpusCache({
            index,
            encoder: sparse,
            maxDocs: config.BM25_FUSION_MAX_DOCS,
            ttlMs: config.BM25_FUSION_CACHE_TTL * 1000,
            log,
          }),
          metrics,
          log,
        },
        collection: createCollectionState({
          index,
          refreshMs: COLLECTION_REFRESH_MS,
          partialRefreshMs: 1000,
        }),
        llm,
        generateQueries: config.ENABLE_QUERY_GENERATION,
        lastMessages: config.QUERY_GENERATION_MESSAGES,
        maxQueries: config.QUERY_GENERATION_MAX_QUERIES,
        mergeResults: config.MERGE_QUERY_RESULTS,
        opening: createOpeningChunks(index, config.SMALL_COLLECTION_CHUNKS),
        log,
      });
      registerSearchRoutes(app, ctx, service);
    },
    async start() {
      await checkIndexSettings(index, config, log);
    },
    async close() {
      await dense?.close?.();
      if (ownsIndex) await index.close();
    },
  };
}
