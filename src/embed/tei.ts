import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { KildeError } from '../errors.js';
import { joinUrl } from '../net/join-url.js';
import { type EmbeddingBackend, InputTooLongError } from './embedding-backend.js';
import { excerpt, type HttpAnswer, jsonPoster, type RetryPolicy } from './http-retry.js';

export interface TeiOptions {
  /** EMBEDDING_API_BASE_URL of the text-embeddings-inference server (no `/v1`). */
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  log: Logger;
  clock?: Clock | undefined;
}

/** `EmbedResponse` of tei-openapi.json: one float array per input. */
const embedResponse = z.array(z.array(z.number()));
/** `ErrorResponse` of tei-openapi.json. */
const errorResponse = z.object({ error: z.string(), error_type: z.string() });

/**
 * 422 is TEI's tokenizer error; only the ones about length are worth splitting for (413, TEI's
 * validation error, is always about size: too many inputs, too many batch tokens or one input too long).
 */
const LENGTH_MESSAGE = /less than \d+ tokens|too long|exceed|maximum|max_input_length|max_batch_tokens/i;

/**
 * Hugging Face text-embeddings-inference: `POST {base}/embed` with
 * `{inputs: string[], truncate: false, normalize: true}`. `truncate: false` because TEI would cut an
 * over-long input silently; instead TEI answers 413 and Kilde splits: a refused batch is halved until
 * the offending input stands alone, which then goes back to the caller as `InputTooLongError` to be
 * cut into windows. Nothing is dropped.
 */
export function createTeiBackend(o: TeiOptions): EmbeddingBackend {
  const url = joinUrl(o.baseUrl, 'embed');
  const postJson = jsonPoster({ ...o, url });

  function failure(answer: HttpAnswer): KildeError {
    const err = errorResponse.safeParse(safeJson(answer.text));
    const reason = err.success ? `${err.data.error_type}: ${err.data.error}` : excerpt(answer.text);
    const retried = answer.attempts > 1 ? ` after ${answer.attempts} attempts` : '';
    return new KildeError('EMBEDDING_FAILED', `TEI answered HTTP ${answer.status}${retried}: POST ${url}`, {
      detail: reason,
    });
  }

  function refusesSize(answer: HttpAnswer): boolean {
    if (answer.status === 413) return true;
    if (answer.status !== 422) return false;
    const err = errorResponse.safeParse(safeJson(answer.text));
    return LENGTH_MESSAGE.test(err.success ? err.data.error : answer.text);
  }

  const post = (texts: string[], retry: RetryPolicy, signal: AbortSignal | undefined) =>
    postJson({ inputs: texts, truncate: false, normalize: true }, retry, signal);

  function read(answer: HttpAnswer, inputs: number): number[][] {
    const parsed = embedResponse.safeParse(safeJson(answer.text));
    if (!parsed.success) {
      throw new KildeError('EMBEDDING_FAILED', `TEI answer is not an array of embeddings: POST ${url}`, {
        detail: excerpt(answer.text),
      });
    }
    if (parsed.data.length !== inputs) {
      throw new KildeError(
        'EMBEDDING_FAILED',
        `TEI answered ${parsed.data.length} embeddings for ${inputs} inputs`,
      );
    }
    return parsed.data;
  }

  /** `offset` is the position of `texts[0]` in the caller's batch, for `InputTooLongError.index`. */
  async function embed(
    texts: string[],
    offset: number,
    signal: AbortSignal | undefined,
  ): Promise<number[][]> {
    const answer = await post(texts, o.retry, signal);
    if (answer.status >= 200 && answer.status < 300) return read(answer, texts.length);
    if (!refusesSize(answer)) throw failure(answer);
    const reason = excerpt(answer.text);
    if (texts.length === 1) throw new InputTooLongError(offset, `TEI HTTP ${answer.status}: ${reason}`);
    o.log.info(
      { inputs: texts.length, status: answer.status, reason },
      'TEI refused a batch for its size; halving it',
    );
    const mid = Math.ceil(texts.length / 2);
    const head = await embed(texts.slice(0, mid), offset, signal);
    const tail = await embed(texts.slice(mid), offset + mid, signal);
    return [...head, ...tail];
  }

  return {
    embedBatch: (texts, signal) => embed(texts, 0, signal),
    async probe(signal) {
      const answer = await post(['ping'], { ...o.retry, maxRetries: 0 }, signal);
      if (answer.status < 200 || answer.status >= 300) throw failure(answer);
      return read(answer, 1)[0] ?? [];
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
