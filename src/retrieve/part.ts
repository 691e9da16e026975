import { join } from 'node:path';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock.js';
import { expandHome } from '../config/index-settings.js';
import type { RetrieveConfig } from '../config/retrieve.js';
import { registerEvalRoutes } from '../eval/routes.js';
import { createRunStore } from '../eval/store.js';
import type { ServicePart } from '../http/app.js';
import type { VectorIndex } from '../index/store.js';
import { kildeVersion } from '../version.js';
import { registerDifyRoute } from './dify.js';
import { registerLibreChatReadRoutes } from './librechat.js';
import { registerSearchRoutes, SEARCH_DEFAULT_K, SEARCH_LIMITS } from './routes.js';
import type { SearchService } from './search-service.js';
import { createSearchStack, type SearchStack } from './search-stack.js';

export interface RetrieveDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** The agentic loop's deadline runs on it (tests pass a manual clock). */
  clock?: Clock;
  /** Tests and `serve all` pass an already open index. */
  index?: VectorIndex;
}

export interface RetrievePart extends ServicePart {
  /** The search stack behind `POST /search`; `serve all` hands it to the MCP knowledge tools too. */
  stack: SearchStack;
}

/**
 * The retrieval service: `POST /search` over the shared index (read-only), and `POST /api/v1/eval`
 * (docs/quality.md), which runs labelled queries through that same search service.
 */
export async function createRetrievePart(config: RetrieveConfig, deps: RetrieveDeps): Promise<RetrievePart> {
  const stack = await createSearchStack(config, deps);
  let service: SearchService | undefined;
  return {
    name: 'retrieve',
    stack,
    probes: stack.probes,
    info: () => ({
      search: {
        modes_available: service?.modesAvailable() ?? { hybrid: false, rerank: false, agentic: false },
        default_k: SEARCH_DEFAULT_K,
        max_k: SEARCH_LIMITS.k,
      },
    }),
    async register(app, ctx) {
      const search = stack.service(ctx.metrics);
      service = search;
      registerSearchRoutes(app, ctx, search);
      registerDifyRoute(app, ctx, { service: search, index: stack.index });
      // LibreChat's RAG API (docs/librechat.md): mounted only with its shared secret.
      const secret = config.LIBRECHAT_JWT_SECRET;
      if (secret !== undefined) {
        const settings = {
          secret,
          prefix: config.LIBRECHAT_COLLECTION_PREFIX,
          clock: deps.clock ?? systemClock,
        };
        await app.register(async (scope) =>
          registerLibreChatReadRoutes(scope, ctx, { service: search, index: stack.index, settings }),
        );
      }
      const { index } = stack;
      registerEvalRoutes(app, ctx, {
        search: async (query, collections, k) =>
          (await search.search({ queries: [query], collection_names: [...collections], k })).metadatas[0] ??
          [],
        store: createRunStore(evalRunsDir(config)),
        missingCollections: async (names) => {
          const missing: string[] = [];
          for (const name of names)
            if ((await index.count({ collectionNames: [name] })) === 0) missing.push(name);
          return missing;
        },
        settings: () => retrievalSettings(config, index.engine),
        version: kildeVersion(),
      });
    },
    start: () => stack.start(),
    close: () => stack.close(),
  };
}

/** Where evaluation runs are kept: `EVAL_RUNS_DIR`, else `eval-runs` in the data directory. */
export function evalRunsDir(config: Pick<RetrieveConfig, 'EVAL_RUNS_DIR' | 'KILDE_DATA_DIR'>): string {
  return config.EVAL_RUNS_DIR ? expandHome(config.EVAL_RUNS_DIR) : join(config.KILDE_DATA_DIR, 'eval-runs');
}

/** The settings an evaluation run records: what decides how the queries were answered. */
function retrievalSettings(
  config: RetrieveConfig,
  engine: string,
): Record<string, string | number | boolean> {
  return {
    index: engine,
    embedding:
      config.EMBEDDING_PROVIDER === undefined || config.EMBEDDING_PROVIDER === 'none'
        ? 'none'
        : `${config.EMBEDDING_PROVIDER}:${config.EMBEDDING_MODEL}`,
    hybrid: config.ENABLE_HYBRID_SEARCH,
    reranking:
      config.ENABLE_RERANKING && config.RERANK_API_BASE_URL !== undefined
        ? config.RERANK_MODEL || 'on'
        : 'off',
    agentic: config.ENABLE_AGENTIC_RAG,
    sparse_language: config.SPARSE_LANGUAGE,
  };
}
