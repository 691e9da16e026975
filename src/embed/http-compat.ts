import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { KildeError } from '../errors.js';
import { joinUrl } from '../net/join-url.js';
import type { EmbeddingBackend } from './embedding-backend.js';
import { excerpt, type HttpAnswer, jsonPoster, type RetryPolicy } from './http-retry.js';

export interface HttpCompatOptions {
  /** EMBEDDING_API_BASE_URL, usually ending in `/v1`. */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** EMBEDDING_ENCODING_FORMAT: `base64` asks for float32 bytes; `float` (or unset) for JSON numbers. */
  encodingFormat?: 'base64' | 'float' | undefined;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  log: Logger;
  clock?: Clock | undefined;
}

/**
 * Only the fields Kilde reads from an OpenAI `/embeddings` answer. An embedding is a list of numbers
 * or, asked with `encoding_format: base64`, a base64 string of little-endian float32 values (what
 * the OpenAI API and the compatible servers answer; one that ignores the field answers numbers).
 */
const embeddingsAnswer = z.object({
  data: z.array(
    z.object({ index: z.number().int().min(0), embedding: z.union([z.array(z.number()), z.string()]) }),
  ),
});

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A base64 embedding as numbers; undefined when it is not whole float32 values in base64. */
export function decodeBase64Embedding(text: string): number[] | undefined {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.byteLength % 4 !== 0) return undefined;
  const out = new Array<number>(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/**
 * OpenAI-compatible embeddings: `POST {base}/embeddings` with `{model, input: string[]}` (OpenAI,
 * vLLM, LiteLLM, Ollama's `/v1`, TEI's `/v1`...). The answer's `data` is re-ordered by `index`, since
 * the API does not promise input order.
 */
export function createHttpCompatBackend(o: HttpCompatOptions): EmbeddingBackend {
  const url = joinUrl(o.baseUrl, 'embeddings');
  const postJson = jsonPoster({ ...o, url });

  function read(answer: HttpAnswer, inputs: number): number[][] {
    if (answer.status < 200 || answer.status >= 300) {
      const retried = answer.attempts > 1 ? ` after ${answer.attempts} attempts` : '';
      throw new KildeError(
        'EMBEDDING_FAILED',
        `embedding endpoint answered HTTP ${answer.status}${retried}: POST ${url}`,
        { detail: excerpt(answer.text) },
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(answer.text);
    } catch (err) {
      throw new KildeError('EMBEDDING_FAILED', `embedding endpoint answered malformed JSON: POST ${url}`, {
        cause: err,
        detail: excerpt(answer.text),
      });
    }
    const parsed = embeddingsAnswer.safeParse(json);
    if (!parsed.success) {
      throw new KildeError(
        'EMBEDDING_FAILED',
        `embedding endpoint answer is not an OpenAI embeddings list (data[].index, data[].embedding): POST ${url}`,
        { detail: excerpt(answer.text) },
      );
    }
    const sorted = [...parsed.data.data].sort((a, b) => a.index - b.index);
    if (sorted.length !== inputs || sorted.some((d, i) => d.index !== i)) {
      throw new KildeError(
        'EMBEDDING_FAILED',
        `embedding endpoint answered ${sorted.length} embeddings (indexes ${sorted.map((d) => d.index).join(',')}) for ${inputs} inputs`,
      );
    }
    return sorted.map((d) => {
      if (typeof d.embedding !== 'string') return d.embedding;
      const vector = decodeBase64Embedding(d.embedding);
      if (vector === undefined) {
        throw new KildeError(
          'EMBEDDING_FAILED',
          `embedding endpoint answered an embedding that is not base64 float32 values (data[${d.index}].embedding): POST ${url}`,
          { detail: excerpt(d.embedding) },
        );
      }
      return vector;
    });
  }

  async function post(input: string[], retry: RetryPolicy, signal: AbortSignal | undefined) {
    const answer = await postJson(
      // Without EMBEDDING_ENCODING_FORMAT=base64 the request is the plain `{model, input}` it always was.
      o.encodingFormat === 'base64'
        ? { model: o.model, input, encoding_format: 'base64' }
        : { model: o.model, input },
      retry,
      signal,
    );
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
