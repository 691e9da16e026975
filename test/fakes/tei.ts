import type { ServerResponse } from 'node:http';
import { applyFault } from './embedding-faults.js';
import { cosine, fnv1a, hashEmbedding, words } from './hash-embedding.js';
import type { EmbeddingsFault } from './openai-embeddings.js';
import { type FakeServer, type RecordedRequest, sendJson, startRecordingServer } from './recording-server.js';

/**
 * A fake text-embeddings-inference server in the shapes of `test/fixtures/contracts/tei-openapi.json`:
 * `POST /embed` (→ `[[float]]`), `POST /rerank` (→ `[{index, score, text?}]`, best first),
 * `POST /embed_sparse` (→ `[[{index, value}]]`), `GET /health`, `GET /info`; errors as
 * `{error, error_type}` with TEI's statuses (413 validation, 422 tokenizer, 400 empty, 429 overloaded).
 * Dense vectors come from `hashEmbedding`, rerank scores from the cosine of those vectors.
 */
export interface FakeTeiOptions {
  dim: number;
  /** `--max-client-batch-size`: more inputs per request → 413. */
  maxClientBatchSize?: number;
  /** `--max-input-length` in tokens (special tokens included): longer inputs → 413 unless `truncate`. */
  maxInputLength?: number;
  /** The model's tokenizer; default: words and punctuation marks, plus 2 special tokens. */
  countTokens?: (text: string) => number;
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  apiKey?: string;
}

export interface FakeTeiServer extends FakeServer {
  dim: number;
  /** Answered to the next POST requests, one fault per request, in order. */
  faults: EmbeddingsFault[];
  /** Forgets recorded requests and texts, and clears faults (between tests). */
  reset(): void;
  /** Every text that reached the model through `/embed` (after truncation, when asked for), in order. */
  embedded(): string[];
  /** The `/embed` requests only. */
  embedRequests(): RecordedRequest[];
}

type TeiErrorType = 'unhealthy' | 'backend' | 'overloaded' | 'validation' | 'tokenizer' | 'empty';

/** TEI serialises `error_type` in lower case (the examples of tei-openapi.json). */
export function teiError(error: string, errorType: TeiErrorType) {
  return { error, error_type: errorType };
}

export function defaultTeiTokens(text: string): number {
  return (text.match(/[\p{L}\p{M}\p{N}]+|[^\s\p{L}\p{M}\p{N}]/gu)?.length ?? 0) + 2;
}

const SPARSE_VOCAB = 30522;

/** SPLADE-like sparse vector of the fake: one entry per distinct word, `1 + ln(tf)`, sorted by index. */
export function hashSparse(text: string): Array<{ index: number; value: number }> {
  const tf = new Map<number, number>();
  for (const w of words(text)) {
    const index = fnv1a(w) % SPARSE_VOCAB;
    tf.set(index, (tf.get(index) ?? 0) + 1);
  }
  return [...tf].map(([index, n]) => ({ index, value: 1 + Math.log(n) })).sort((a, b) => a.index - b.index);
}

/** Relevance logit of the fake cross-encoder; `/rerank` answers its sigmoid unless `raw_scores`. */
export function rerankLogit(query: string, text: string, dim: number): number {
  return 10 * cosine(hashEmbedding(query, dim), hashEmbedding(text, dim)) - 5;
}

function inputsOf(body: Record<string, unknown>): string[] | undefined {
  const inputs = typeof body.inputs === 'string' ? [body.inputs] : body.inputs;
  return Array.isArray(inputs) && inputs.every((x) => typeof x === 'string') ? inputs : undefined;
}

export async function startFakeTei(options: FakeTeiOptions): Promise<FakeTeiServer> {
  const maxBatch = options.maxClientBatchSize ?? 32;
  const maxLength = options.maxInputLength ?? 512;
  const count = options.countTokens ?? defaultTeiTokens;
  const state = { faults: [] as EmbeddingsFault[] };
  const embedded: string[] = [];

  /** Checks batch size and lengths like TEI's router; returns the texts the model sees, or answers an error. */
  function admit(res: ServerResponse, texts: string[], truncate: boolean): string[] | undefined {
    if (texts.length === 0) return void sendJson(res, 400, teiError('`inputs` cannot be empty', 'empty'));
    if (texts.length > maxBatch) {
      return void sendJson(
        res,
        413,
        teiError(`batch size ${texts.length} > maximum allowed batch size ${maxBatch}`, 'validation'),
      );
    }
    const out: string[] = [];
    for (const text of texts) {
      const n = count(text);
      if (n <= maxLength) out.push(text);
      else if (truncate) out.push(truncateTo(text, maxLength, count));
      else {
        return void sendJson(
          res,
          413,
          teiError(
            `Input validation error: \`inputs\` must have less than ${maxLength} tokens. Given: ${n}`,
            'validation',
          ),
        );
      }
    }
    return out;
  }

  const handle = async (req: RecordedRequest, res: ServerResponse) => {
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      res.statusCode = 401;
      return void res.end();
    }
    if (req.method === 'GET' && req.path === '/health') return void res.end();
    if (req.method === 'GET' && req.path === '/info') {
      return sendJson(res, 200, {
        model_id: 'fake/hash-embedding',
        model_sha: null,
        model_dtype: 'float32',
        model_type: { embedding: { pooling: 'mean' } },
        served_model_name: 'fake/hash-embedding',
        max_concurrent_requests: 512,
        max_input_length: maxLength,
        max_batch_tokens: 16384,
        max_client_batch_size: maxBatch,
        auto_truncate: false,
        tokenization_workers: 1,
        version: '1.9.0',
      });
    }
    if (req.method !== 'POST' || !['/embed', '/rerank', '/embed_sparse'].includes(req.path)) {
      res.statusCode = 404;
      return void res.end();
    }
    const body = req.json;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendJson(
        res,
        422,
        teiError('Failed to deserialize the JSON body into the target type', 'validation'),
      );
    }
    const b = body as Record<string, unknown>;
    const played = await applyFault(state.faults.shift(), res, {
      error: teiError('Model is overloaded', 'overloaded'),
      malformedBody: '[[0.1,',
    });
    if (played.answered) return;
    const dim = played.dim ?? options.dim;
    const truncate = b.truncate === true;

    if (req.path === '/rerank') {
      if (
        typeof b.query !== 'string' ||
        !Array.isArray(b.texts) ||
        !b.texts.every((t) => typeof t === 'string')
      ) {
        return sendJson(res, 422, teiError('missing field `query` or `texts`', 'validation'));
      }
      const texts: string[] = b.texts;
      const query = b.query;
      if (
        admit(
          res,
          texts.map((t) => `${query} ${t}`),
          truncate,
        ) === undefined
      )
        return;
      const ranks = texts
        .map((text, index) => {
          const logit = rerankLogit(query, text, options.dim);
          const score = b.raw_scores === true ? logit : 1 / (1 + Math.exp(-logit));
          return { index, score, ...(b.return_text === true ? { text } : {}) };
        })
        .sort((x, y) => y.score - x.score);
      return sendJson(res, 200, ranks);
    }

    const inputs = inputsOf(b);
    if (inputs === undefined) return sendJson(res, 422, teiError('missing field `inputs`', 'validation'));
    const admitted = admit(res, inputs, truncate);
    if (admitted === undefined) return;
    if (req.path === '/embed_sparse') return sendJson(res, 200, admitted.map(hashSparse));

    embedded.push(...admitted);
    const normalize = b.normalize !== false;
    return sendJson(
      res,
      200,
      admitted.map((text) => {
        const v = hashEmbedding(text, dim);
        // un-normalised output: scale by the token count, as raw mean-pooled states are not unit length
        return normalize ? v : v.map((x) => x * count(text));
      }),
    );
  };

  const server = await startRecordingServer(handle);
  return {
    ...server,
    dim: options.dim,
    get faults() {
      return state.faults;
    },
    set faults(f: EmbeddingsFault[]) {
      state.faults = f;
    },
    reset() {
      server.requests.length = 0;
      embedded.length = 0;
      state.faults = [];
    },
    embedded: () => [...embedded],
    embedRequests: () => server.requests.filter((r) => r.method === 'POST' && r.path === '/embed'),
  };
}

/** The longest word-boundary prefix of `text` within `max` tokens (TEI's right truncation). */
function truncateTo(text: string, max: number, count: (t: string) => number): string {
  const parts = text.split(/(\s+)/);
  let out = '';
  for (const p of parts) {
    if (count(out + p) > max) break;
    out += p;
  }
  return out;
}
