import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { KildeError } from '../http/errors.js';
import { joinUrl } from '../llm/join-url.js';
import type { EmbeddingBackend } from './embedding-backend.js';
import { type HttpAnswer, postJsonWithRetry, type RetryPolicy } from './http-retry.js';

export interface HttpCompatOptions {
  /** EMBEDDING_API_BASE_URL, usually ending in `/v1`. */
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  log: Logger;
  clock?: Clock | undefined;
}

/** Only the fields Kilde reads from an OpenAI `/embeddings` answer. */
const embeddingsAnswer = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
});

/** Upstream error text is kept short: it goes into logs and (with DEBUG) error bodies. */
function excerpt(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/**
 * OpenAI-compatible embeddings: `POST {base}/embeddings` with `{model, input: string[]}` (OpenAI,
 * vLLM, LiteLLM, Ollama's `/v1`, TEI's `/v1`...). The answer's `data` is re-ordered by `index`, since
 * the API does not promise input order.
 */
export function createHttpCompatBackend(o: HttpCompatOptions): EmbeddingBackend {
  const url = joinUrl(o.baseUrl, 'embeddings');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;

  function read(answer: HttpAnswer, inputs: number): number[][] {
    if (answer.status < 200 || answer.status >= 300) {
      const retried = answer.attempts > 1 ? ` after ${answer.attempts} attempts` : '';
      throw new KildeError(
        'EMBEDDING_FAILED',
        502,
        `embedding endpoint answered HTTP ${answer.status}${retried}: POST ${url}`,
        { detail: excerpt(answer.text) },
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(answer.text);
    } catch (err) {
      throw new KildeError(
        'EMBEDDING_FAILED',
        502,
        `embedding endpoint answered malformed JSON: POST ${url}`,
        {
          cause: err,
          detail: excerpt(answer.text),
        },
      );
    }
    const parsed = embeddingsAnswer.safeParse(json);
    if (!parsed.success) {
      throw new KildeError(
        'EMBEDDING_FAILED',
        502,
        `embedding endpoint answer is not an OpenAI embeddings list (data[].index, data[].embedding): POST ${url}`,
        { detail: excerpt(answer.text) },
      );
    }
    const sorted = [...parsed.data.data].sort((a, b) => a.index - b.index);
    if (sorted.length !== inputs || sorted.some((d, i) => d.index !== i)) {
      throw new KildeError(
        'EMBEDDING_FAILED',
        502,
        `embedding endpoint answered ${sorted.length} embeddings (indexes ${sorted.map((d) => d.index).join(',')}) for ${inputs} inputs`,
      );
    }
    return sorted.map((d) => d.embedding);
  }

  async function post(input: string[], retry: RetryPolicy, signal: AbortSignal | undefined) {
    const answer = await postJsonWithRetry({
      url,
      headers,
      body: { model: o.model, input },
      timeoutMs: o.timeoutMs,
      retry,
      fetch: o.fetch,
      clock: o.clock,
      log: o.log,
      signal,
    });
    return read(answer, input.length);
  }

  return {
    embedBatch: (texts, signal) => post(texts, o.retry, signal),
    async probe(signal) {
      const [v] = await post(['ping'], { ...o.retry, maxRetries: 0 }, signal);
      return v ?? [];
    },
  };
}
