import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock.js';
import { describeCause } from '../errors.js';
import { inClientSpan } from '../telemetry/http-client.js';
import { tracingActive } from '../telemetry/tracing.js';

/**
 * The one outbound HTTP helper every upstream client uses (LLM, embeddings, TEI, rerank, extraction
 * sidecars, weather, Qdrant): a time-out driven by an injectable clock, the caller's abort signal,
 * one failure type for "no answer", and retries with exponential back-off or the server's
 * `Retry-After`. Each client keeps only what is its own: the URL, the body, how to read the answer,
 * and which error code a failure becomes.
 */

export interface HttpDeps {
  fetch?: typeof fetch;
  clock?: Clock;
}

export interface HttpRequest {
  url: string;
  /** Default `POST` when there is a body, else `GET`. */
  method?: string;
  headers?: Record<string, string>;
  /** A JSON body (sets `content-type: application/json`). */
  json?: unknown;
  /** A raw body (multipart form data), when there is no `json`. */
  body?: RequestInit['body'];
  timeoutMs: number;
  /** The caller's cancellation: aborts at once with its reason, never retried. */
  signal?: AbortSignal | undefined;
  /** An undici dispatcher (connection pool with its own connect time-out), passed to Node's fetch. */
  dispatcher?: RequestInit['dispatcher'];
}

export interface HttpAnswer {
  status: number;
  ok: boolean;
  headers: Headers;
  text: string;
  /** Requests sent, retries included. */
  attempts: number;
}

/** No HTTP answer at all: the upstream was unreachable or silent past the time-out. */
export class HttpFailure extends Error {
  override readonly name = 'HttpFailure';
  /** A failure to get an answer is worth another try. */
  readonly retryable = true;
  constructor(
    readonly kind: 'timeout' | 'unreachable',
    readonly method: string,
    readonly url: string,
    readonly timeoutMs: number,
    readonly attempts: number,
    options: { cause?: unknown },
  ) {
    super(
      kind === 'timeout'
        ? `no answer within ${timeoutMs / 1000} s: ${method} ${url}`
        : `unreachable (${describeCause(options.cause)}): ${method} ${url}`,
      options,
    );
  }

  /** The system error code under `fetch failed` (ECONNREFUSED, UND_ERR_CONNECT_TIMEOUT…), when there is one. */
  get networkCode(): string | undefined {
    const inner = this.cause instanceof Error ? this.cause.cause : undefined;
    const code = (inner as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' ? code : undefined;
  }

  /** The short reason without the URL: `no answer within 2 s`, `unreachable (ECONNREFUSED …)`. */
  get reason(): string {
    return this.kind === 'timeout'
      ? `no answer within ${this.timeoutMs / 1000} s`
      : `unreachable (${describeCause(this.cause)})`;
  }
}

/** Sends one request and reads the whole answer, whatever its status. Throws `HttpFailure` without one. */
export async function httpRequest(req: HttpRequest, deps: HttpDeps = {}, attempts = 1): Promise<HttpAnswer> {
  const answer = await httpExchange(req, (res) => res.text(), deps, attempts);
  return { status: answer.status, ok: answer.ok, headers: answer.headers, text: answer.body, attempts };
}

/** An answer whose body was read by the caller's reader (bytes, a capped stream...). */
export interface HttpExchange<T> {
  status: number;
  ok: boolean;
  headers: Headers;
  body: T;
  attempts: number;
}

/**
 * Sends one request and reads the answer with `read` (the time-out covers the body too). A reader
 * may throw its own error (a body over a size cap, say); it reaches the caller unchanged. Without an
 * answer, `HttpFailure`.
 */
export function httpExchange<T>(
  req: HttpRequest,
  read: (res: Response) => Promise<T>,
  deps: HttpDeps = {},
  attempts = 1,
): Promise<HttpExchange<T>> {
  if (!tracingActive()) return exchange(req, read, deps, attempts);
  // With tracing on, each attempt is a CLIENT span and carries its `traceparent` (src/telemetry/).
  return inClientSpan(methodOf(req), req.url, attempts, req.headers, (headers) =>
    exchange({ ...req, headers }, read, deps, attempts),
  );
}

function methodOf(req: HttpRequest): string {
  return req.method ?? (req.json !== undefined || req.body !== undefined ? 'POST' : 'GET');
}

async function exchange<T>(
  req: HttpRequest,
  read: (res: Response) => Promise<T>,
  deps: HttpDeps,
  attempts: number,
): Promise<HttpExchange<T>> {
  const clock = deps.clock ?? systemClock;
  const method = methodOf(req);
  const timeout = new AbortController();
  const timer = clock.schedule(
    () => timeout.abort(new DOMException('The operation timed out', 'TimeoutError')),
    req.timeoutMs,
  );
  const signal = req.signal ? AbortSignal.any([req.signal, timeout.signal]) : timeout.signal;
  const headers: Record<string, string> = { ...req.headers };
  let body: RequestInit['body'] | undefined = req.body;
  if (req.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(req.json);
  }
  let res: Response;
  try {
    const init: RequestInit = { method, headers, signal };
    if (body !== undefined) init.body = body;
    if (req.dispatcher !== undefined) init.dispatcher = req.dispatcher;
    res = await (deps.fetch ?? fetch)(req.url, init);
  } catch (err) {
    timer.cancel();
    throw failure(err, req, method, timeout.signal, attempts);
  }
  try {
    const value = await read(res);
    return { status: res.status, ok: res.ok, headers: res.headers, body: value, attempts };
  } catch (err) {
    // The reader's own verdict (e.g. a body over its cap) stands; a stream cut by the time-out,
    // the caller or the network is a failure to get an answer.
    if (!timeout.signal.aborted && !req.signal?.aborted && !isStreamFailure(err)) throw err;
    throw failure(err, req, method, timeout.signal, attempts);
  } finally {
    timer.cancel();
  }
}

function failure(
  err: unknown,
  req: HttpRequest,
  method: string,
  timeout: AbortSignal,
  attempts: number,
): unknown {
  if (req.signal?.aborted) return req.signal.reason;
  const kind = timeout.aborted ? 'timeout' : 'unreachable';
  return new HttpFailure(kind, method, req.url, req.timeoutMs, attempts, { cause: err });
}

/** undici reports a body cut off mid-way as a `TypeError` (`terminated`) or an `AbortError`. */
function isStreamFailure(err: unknown): boolean {
  return err instanceof TypeError || (err instanceof Error && err.name === 'AbortError');
}

/**
 * A reader for `httpExchange`: the body as bytes, refused once it passes `maxBytes` (the stream is
 * cancelled there, so a huge answer is never held).
 */
export function readBytes(maxBytes: number, tooLarge: () => Error): (res: Response) => Promise<Uint8Array> {
  return async (res) => {
    const declared = Number(res.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body?.cancel();
      throw tooLarge();
    }
    const parts: Uint8Array[] = [];
    let total = 0;
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > maxBytes) {
          await reader.cancel();
          throw tooLarge();
        }
        parts.push(value);
      }
    }
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  };
}

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First back-off; doubles per retry (with jitter). */
  baseDelayMs: number;
  /** Upper bound of one wait, also for a server's `Retry-After`. */
  maxDelayMs: number;
}

export const DEFAULT_BACKOFF = { baseDelayMs: 500, maxDelayMs: 30_000 } as const;

/** Transient answers worth another try: overload and server-side failures (not 501/505, which are permanent). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status !== 501 && status !== 505);
}

/** `Retry-After` as milliseconds to wait: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface RetryDeps extends HttpDeps {
  log: Logger;
  /** Names the upstream in the retry warnings (`embedding`, `rerank`...). */
  upstream: string;
  /** Jitter source in [0, 1); tests pin it. */
  random?: () => number;
}

/**
 * Sends `req`, retrying 429/5xx answers, network errors and time-outs up to `maxRetries` times with
 * exponential back-off (with jitter, so many workers don't retry in lock-step), or exactly the
 * server's `Retry-After` when it sends one; every wait is capped at `maxDelayMs`. Other answers,
 * 2xx and 4xx alike, come back after one attempt; the last answer or `HttpFailure` comes back when
 * retries run out. The caller's abort stops at once, waits included.
 */
export async function httpRequestWithRetry(
  req: HttpRequest,
  retry: RetryPolicy,
  deps: RetryDeps,
): Promise<HttpAnswer> {
  const clock = deps.clock ?? systemClock;
  const random = deps.random ?? Math.random;
  for (let attempt = 0; ; attempt++) {
    let failure: string;
    let retryAfter: number | undefined;
    try {
      const answer = await httpRequest(req, deps, attempt + 1);
      if (!isRetryableStatus(answer.status) || attempt >= retry.maxRetries) return answer;
      failure = `HTTP ${answer.status}`;
      retryAfter = parseRetryAfter(answer.headers.get('retry-after'), clock.now());
    } catch (err) {
      if (!(err instanceof HttpFailure) || attempt >= retry.maxRetries) throw err;
      failure = err.reason;
    }
    const exponential = retry.baseDelayMs * 2 ** attempt * (0.5 + random() / 2);
    const delayMs = Math.round(Math.min(retry.maxDelayMs, retryAfter ?? exponential));
    deps.log.warn(
      { url: req.url, attempt: attempt + 1, failure, delayMs, retryAfter: retryAfter !== undefined },
      `${deps.upstream} request failed; retrying`,
    );
    await clock.sleep(delayMs, req.signal);
  }
}

/** The answer's JSON, or undefined when it is not JSON. */
export function jsonOf(answer: Pick<HttpAnswer, 'text'>): unknown {
  try {
    return answer.text === '' ? undefined : JSON.parse(answer.text);
  } catch {
    return undefined;
  }
}
