import type { ServerResponse } from 'node:http';
import { applyFault } from './embedding-faults.js';
import { hashEmbedding, words } from './hash-embedding.js';
import { type FakeServer, type RecordedRequest, sendJson, startRecordingServer } from './recording-server.js';

/**
 * A fake OpenAI embeddings server: `POST /v1/embeddings` and `GET /v1/models` in the exact wire shape
 * of the OpenAI API, embedding with `hashEmbedding` (so tests can recompute every vector).
 */
export type EmbeddingsFault =
  /** Answer this status with an OpenAI error body (or `body`), optionally with `Retry-After`. */
  | { kind: 'status'; status: number; retryAfter?: string; body?: unknown }
  /** Answer normally after a delay. */
  | { kind: 'slow'; delayMs: number }
  /** Answer normally once `until` settles: the test decides when (no clock involved). */
  | { kind: 'held'; until: Promise<unknown> }
  /** Answer vectors of another size. */
  | { kind: 'wrong-dim'; dim: number }
  /** Close the socket without answering (a network error for the client). */
  | { kind: 'hang-up' }
  /** Answer 200 with a body that is not JSON. */
  | { kind: 'malformed' };

export interface FakeEmbeddingsOptions {
  dim: number;
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  apiKey?: string;
  /** Inputs with more words than this are refused with OpenAI's 400 context-length error. */
  maxInputWords?: number;
}

export interface FakeEmbeddingsServer extends FakeServer {
  /** Base URL including `/v1`, as operators configure it. */
  baseUrl: string;
  dim: number;
  /** Answered to the next embedding requests, one fault per request, in order. */
  faults: EmbeddingsFault[];
  /** Answered to every embedding request while set (after `faults` run out). */
  always: EmbeddingsFault | undefined;
  /** Answer `data` in reverse order: the API does not promise input order, `index` is what counts. */
  reverse: boolean;
  /** Forgets recorded requests and texts, and clears faults (between tests). */
  reset(): void;
  /** Every text received by `POST /v1/embeddings`, in arrival order. */
  inputs(): string[];
  /** The embedding requests (method POST, path /v1/embeddings) only. */
  embeddingRequests(): RecordedRequest[];
}

export function openAIError(message: string, type: string, code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

function validate(body: unknown): { model: string; input: string[]; base64: boolean } | string {
  if (typeof body !== 'object' || body === null) return 'We could not parse the JSON body of your request.';
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string') return 'you must provide a model parameter';
  const input = typeof b.input === 'string' ? [b.input] : b.input;
  if (!Array.isArray(input) || input.length === 0 || !input.every((x) => typeof x === 'string')) {
    return "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";
  }
  if (input.length > 2048) return `'$.input' is too long: ${input.length} > 2048 items.`;
  if (b.encoding_format !== undefined && b.encoding_format !== 'float' && b.encoding_format !== 'base64') {
    return "'$.encoding_format' must be one of 'float' or 'base64'.";
  }
  return { model: b.model, input, base64: b.encoding_format === 'base64' };
}

export async function startFakeOpenAIEmbeddings(
  options: FakeEmbeddingsOptions,
): Promise<FakeEmbeddingsServer> {
  const state = {
    faults: [] as EmbeddingsFault[],
    always: undefined as EmbeddingsFault | undefined,
    reverse: false,
  };
  const received: string[] = [];

  const handle = async (req: RecordedRequest, res: ServerResponse) => {
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendJson(
        res,
        401,
        openAIError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'),
      );
    }
    if (req.method === 'GET' && req.path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'fake-embed', object: 'model', owned_by: 'fake' }],
      });
    }
    if (req.method !== 'POST' || req.path !== '/v1/embeddings') {
      return sendJson(
        res,
        404,
        openAIError(`Invalid URL (${req.method} ${req.path})`, 'invalid_request_error'),
      );
    }
    const parsed = validate(req.json);
    if (typeof parsed === 'string') return sendJson(res, 400, openAIError(parsed, 'invalid_request_error'));
    received.push(...parsed.input);

    const played = await applyFault(state.faults.shift() ?? state.always, res, {
      error: openAIError('The server had an error.', 'server_error'),
      malformedBody: '{"object": "list", "data": [',
    });
    if (played.answered) return;
    const dim = played.dim ?? options.dim;
    const tooLong = parsed.input.find(
      (t) => options.maxInputWords !== undefined && words(t).length > options.maxInputWords,
    );
    if (tooLong !== undefined) {
      return sendJson(
        res,
        400,
        openAIError(
          `This model's maximum context length is ${options.maxInputWords} tokens, however you requested ${words(tooLong).length} tokens. Please reduce your prompt.`,
          'invalid_request_error',
        ),
      );
    }
    const data = parsed.input.map((text, index) => {
      const vector = hashEmbedding(text, dim);
      return {
        object: 'embedding',
        index,
        embedding: parsed.base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector,
      };
    });
    if (state.reverse) data.reverse();
    const tokens = parsed.input.reduce((n, t) => n + words(t).length, 0);
    return sendJson(res, 200, {
      object: 'list',
      data,
      model: parsed.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  };

  const server = await startRecordingServer(handle);
  return {
    ...server,
    baseUrl: `${server.url}/v1`,
    dim: options.dim,
    get faults() {
      return state.faults;
    },
    set faults(f: EmbeddingsFault[]) {
      state.faults = f;
    },
    get always() {
      return state.always;
    },
    set always(f: EmbeddingsFault | undefined) {
      state.always = f;
    },
    get reverse() {
      return state.reverse;
    },
    set reverse(r: boolean) {
      state.reverse = r;
    },
    reset() {
      server.requests.length = 0;
      received.length = 0;
      state.faults = [];
      state.always = undefined;
      state.reverse = false;
    },
    inputs: () => [...received],
    embeddingRequests: () =>
      server.requests.filter((r) => r.method === 'POST' && r.path === '/v1/embeddings'),
  };
}
