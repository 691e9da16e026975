import type { Logger } from 'pino';
import { z } from 'zod';
import { approximateTokenCounter } from '../chunk/approx-counter.js';
import type { TokenCounter } from '../chunk/chunker.js';
import type { Clock } from '../clock.js';
import { embeddingPiece } from '../config/index-settings.js';
import { ConfigError } from '../config/parse.js';
import { createBudgetedEmbedder } from './budgeted-embedder.js';
import type { DenseEmbedder } from './dense.js';
import type { EmbeddingBackend } from './embedding-backend.js';
import { createHttpCompatBackend } from './http-compat.js';
import { DEFAULT_BACKOFF, type RetryPolicy } from './http-retry.js';
import { createInprocessBackend } from './inprocess.js';
import { createTeiBackend } from './tei.js';
import { textBudget } from './token-budget.js';

const embeddingSettings = z.object(embeddingPiece);
/** The parsed `EMBEDDING_*` variables (output of the `embeddingPiece` fields). */
export type EmbeddingSettings = z.output<typeof embeddingSettings>;

export interface DenseEmbedderDeps {
  log: Logger;
  fetch?: typeof fetch;
  /**
   * Counts tokens the way the embedding model does (`loadTokenCounter`). Without one, the conservative
   * estimate of `approx-counter.ts` (one token per started 4 characters of a word, per punctuation
   * mark, per ideograph) sizes the windows of long inputs.
   */
  counter?: TokenCounter;
  /** Back-off of the HTTP providers; defaults: 500 ms doubling, each wait capped at 30 s. */
  backoff?: { baseDelayMs?: number; maxDelayMs?: number };
  /** Time-outs and back-off waits of the HTTP providers (tests pass a manual clock). */
  clock?: Clock;
}

/**
 * Builds the dense embedder selected by EMBEDDING_PROVIDER; `undefined` for `none` (or unset:
 * lexical-only mode). Configuration mistakes throw here, at start-up, naming the variable.
 */
export function createDenseEmbedder(
  config: EmbeddingSettings,
  deps: DenseEmbedderDeps,
): DenseEmbedder | undefined {
  const provider = config.EMBEDDING_PROVIDER;
  if (provider === undefined || provider === 'none') return undefined;
  const dim = config.EMBEDDING_DIM;
  if (dim === undefined) {
    throw new ConfigError(
      `Configuration error: EMBEDDING_DIM is required with EMBEDDING_PROVIDER=${provider} (the model's vector size)`,
    );
  }
  const counter = deps.counter ?? approximateTokenCounter();
  for (const [name, prefix] of [
    ['EMBEDDING_PREFIX_DOC', config.EMBEDDING_PREFIX_DOC],
    ['EMBEDDING_PREFIX_QUERY', config.EMBEDDING_PREFIX_QUERY],
  ] as const) {
    try {
      textBudget(config.EMBEDDING_MAX_TOKENS, prefix, counter);
    } catch (err) {
      throw new ConfigError(
        `Configuration error: ${name} ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
  const log = deps.log.child({ component: 'embedder', provider });
  const backend = createBackend(provider, config, { ...deps, log });
  return createBudgetedEmbedder(backend, {
    provider,
    model: config.EMBEDDING_MODEL,
    dim,
    prefixDoc: config.EMBEDDING_PREFIX_DOC,
    prefixQuery: config.EMBEDDING_PREFIX_QUERY,
    batchSize: config.EMBEDDING_BATCH_SIZE,
    maxTokens: config.EMBEDDING_MAX_TOKENS,
    counter,
    log,
  });
}

function createBackend(
  provider: 'http-compat' | 'inference-server' | 'inprocess',
  config: EmbeddingSettings,
  deps: DenseEmbedderDeps,
): EmbeddingBackend {
  if (provider === 'inprocess') {
    return createInprocessBackend({
      model: config.EMBEDDING_MODEL,
      offline: config.EMBEDDING_OFFLINE,
      maxTokens: config.EMBEDDING_MAX_TOKENS,
      log: deps.log,
    });
  }
  const baseUrl = config.EMBEDDING_API_BASE_URL;
  if (baseUrl === undefined) {
    throw new ConfigError(
      `Configuration error: EMBEDDING_API_BASE_URL is required with EMBEDDING_PROVIDER=${provider} (e.g. ${provider === 'http-compat' ? 'http://proxy/v1' : 'http://tei:80'})`,
    );
  }
  const retry: RetryPolicy = {
    maxRetries: config.EMBEDDING_MAX_RETRIES,
    baseDelayMs: deps.backoff?.baseDelayMs ?? DEFAULT_BACKOFF.baseDelayMs,
    maxDelayMs: deps.backoff?.maxDelayMs ?? DEFAULT_BACKOFF.maxDelayMs,
  };
  const common = {
    baseUrl,
    apiKey: config.EMBEDDING_API_KEY,
    timeoutMs: config.EMBEDDING_TIMEOUT * 1000,
    retry,
    fetch: deps.fetch ?? fetch,
    log: deps.log,
    clock: deps.clock,
  };
  if (provider === 'http-compat') {
    if (config.EMBEDDING_MODEL === '') {
      throw new ConfigError(
        'Configuration error: EMBEDDING_MODEL is required with EMBEDDING_PROVIDER=http-compat (sent as `model`)',
      );
    }
    return createHttpCompatBackend({
      ...common,
      model: config.EMBEDDING_MODEL,
      encodingFormat: config.EMBEDDING_ENCODING_FORMAT,
    });
  }
  return createTeiBackend(common);
}
