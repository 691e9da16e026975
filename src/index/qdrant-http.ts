import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { describeCause } from '../errors.js';
import { type HttpAnswer, HttpFailure, httpRequest, jsonOf } from '../net/http.js';

/**
 * A small transport for Qdrant's REST API over an injected `fetch`.
 *
 * Why not `QdrantClient` itself: it always calls the global `fetch` with its own undici agent (no
 * injection point), prints to `console` when an API key travels over http, and probes the server
 * version at construction. Request bodies are still typed with the client package's `Schemas`
 * (Qdrant's generated OpenAPI types); responses are parsed with zod naming only what we read.
 * No retries happen here: a failure surfaces to the caller once.
 */
export interface QdrantHttpOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  timeoutMs: number;
  fetch: typeof fetch;
  log: Logger;
  clock?: Clock | undefined;
}

export interface QdrantCall {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

/** A Qdrant call that failed: HTTP status (0 for network errors and time-outs) plus Qdrant's message. */
export class QdrantError extends Error {
  override readonly name = 'QdrantError';
  constructor(
    message: string,
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Unreachable (status 0), overloaded or failing (5xx): worth another try; a 4xx refusal is not. */
  get retryable(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

const errorBody = z.object({ status: z.object({ error: z.string() }).partial() }).partial();

// `{result: …}` around each result schema, made once: zod compiles an object schema on its first
// parse, which cost more than the parse itself when a fresh wrapper was built for every answer.
const answers = new WeakMap<z.ZodType, z.ZodType>();
function answerOf<T>(result: z.ZodType<T>): z.ZodType<{ result: T }> {
  let answer = answers.get(result);
  if (!answer) {
    answer = z.object({ result });
    answers.set(result, answer);
  }
  return answer as z.ZodType<{ result: T }>;
}

export interface QdrantHttp {
  /** Sends the call and returns the parsed `result`; throws `QdrantError` on any non-2xx. */
  call<T>(c: QdrantCall, result: z.ZodType<T>): Promise<T>;
  /** Like `call`, but a 404 answers `undefined` (used to tell "no collection" from an error). */
  callOrNotFound<T>(c: QdrantCall, result: z.ZodType<T>): Promise<T | undefined>;
}

/**
 * The REST base URL of a `VECTORDB_URI`. Like Qdrant's official clients (Python and JS), a URI
 * without an explicit port means port 6333, so one `VECTORDB_URI` reaches the same server from Kilde
 * and from the reference deployment; write the port (`https://host:443`) to override.
 */
export function qdrantBaseUrl(uri: string): string {
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(uri)?.[1] ?? '';
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const url = new URL(uri);
  // Taken from the text, since `new URL` drops default ports (443, 80) that were written out.
  const host = /:\d+$/.test(hostPort) ? hostPort : `${url.hostname}:6333`;
  return `${url.protocol}//${host}${url.pathname.replace(/\/+$/, '')}`;
}

/** Network errors of a reused connection the server had closed (undici's `other side closed`, a reset). */
const STALE_CONNECTION = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

export function createQdrantHttp(opts: QdrantHttpOptions): QdrantHttp {
  const base = qdrantBaseUrl(opts.baseUrl);
  // `identity`: asked for gzip (fetch asks by default), Qdrant streams the compressed answer in two
  // writes, and the second waits for the client's delayed ACK: 40-50 ms added to most searches on a
  // busy server (measured on 1.18.3 over loopback; docs/qdrant.md). Answers are small; plain is faster.
  const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'identity' };
  if (opts.apiKey) headers['api-key'] = opts.apiKey;

  async function send(c: QdrantCall): Promise<{ status: number; json: unknown; text: string }> {
    const op = `${c.method} ${c.path}`;
    const qs = c.query ? `?${new URLSearchParams(c.query).toString()}` : '';
    const started = performance.now();
    const request = () =>
      httpRequest(
        {
          url: base + c.path + qs,
          method: c.method,
          headers,
          ...(c.body === undefined ? {} : { json: c.body }),
          timeoutMs: opts.timeoutMs,
          signal: c.signal,
        },
        { fetch: opts.fetch, ...(opts.clock ? { clock: opts.clock } : {}) },
      );
    let res: HttpAnswer;
    try {
      try {
        res = await request();
      } catch (err) {
        // A kept-alive connection the server closed while idle fails the next request sent on it
        // before any byte of it was read ("other side closed"): sent again, once, on a fresh one.
        // Every call Kilde makes is idempotent (points by id, deletes and reads by filter).
        if (!(err instanceof HttpFailure) || !STALE_CONNECTION.has(err.networkCode ?? '')) throw err;
        opts.log.debug({ op, code: err.networkCode }, 'qdrant connection closed by the server; sent again');
        res = await request();
      }
    } catch (err) {
      if (!(err instanceof HttpFailure)) throw err;
      if (err.kind === 'timeout') {
        throw new QdrantError(`Qdrant ${op} timed out after ${opts.timeoutMs} ms`, 0, { cause: err });
      }
      throw new QdrantError(`Qdrant ${op} failed: ${describeCause(err.cause)}`, 0, { cause: err });
    }
    opts.log.debug({ op, status: res.status, ms: Math.round(performance.now() - started) }, 'qdrant call');
    return { status: res.status, json: jsonOf(res), text: res.text };
  }

  function fail(c: QdrantCall, status: number, json: unknown, text: string): never {
    const parsed = errorBody.safeParse(json);
    const detail = (parsed.success && parsed.data.status?.error) || text.slice(0, 300) || 'no body';
    throw new QdrantError(`Qdrant ${c.method} ${c.path} failed: HTTP ${status}: ${detail}`, status);
  }

  function parse<T>(c: QdrantCall, json: unknown, result: z.ZodType<T>): T {
    const parsed = answerOf(result).safeParse(json);
    if (!parsed.success) {
      throw new QdrantError(
        `Qdrant ${c.method} ${c.path} answered an unexpected body: ${z.prettifyError(parsed.error)}`,
        200,
      );
    }
    return parsed.data.result;
  }

  return {
    async call(c, result) {
      const { status, json, text } = await send(c);
      if (status < 200 || status > 299) fail(c, status, json, text);
      return parse(c, json, result);
    },
    async callOrNotFound(c, result) {
      const { status, json, text } = await send(c);
      if (status === 404) return undefined;
      if (status < 200 || status > 299) fail(c, status, json, text);
      return parse(c, json, result);
    },
  };
}
