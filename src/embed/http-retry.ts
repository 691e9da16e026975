import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { KildeError } from '../errors.js';
import { type HttpAnswer, HttpFailure, httpRequestWithRetry, type RetryPolicy } from '../net/http.js';

export { DEFAULT_BACKOFF, type HttpAnswer, type RetryPolicy } from '../net/http.js';

export interface PostJsonRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  log: Logger;
  clock?: Clock | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * POSTs an embedding request through the shared outbound helper (time-out, retries with back-off or
 * `Retry-After`); an endpoint that never answers becomes `EMBEDDING_FAILED`. Answers of any status
 * come back to the embedder, which reads them.
 */
export async function postJsonWithRetry(r: PostJsonRequest): Promise<HttpAnswer> {
  try {
    return await httpRequestWithRetry(
      { url: r.url, headers: r.headers, json: r.body, timeoutMs: r.timeoutMs, signal: r.signal },
      r.retry,
      { fetch: r.fetch, log: r.log, upstream: 'embedding', ...(r.clock ? { clock: r.clock } : {}) },
    );
  } catch (err) {
    if (!(err instanceof HttpFailure)) throw err;
    throw new KildeError(
      'EMBEDDING_FAILED',
      `embedding endpoint ${err.reason} after ${err.attempts} attempt(s): POST ${r.url}`,
      { cause: err },
    );
  }
}

/** Where an embedding backend posts: its endpoint, key and transport settings. */
export interface JsonEndpoint {
  url: string;
  /** Sent as a bearer token when set. */
  apiKey: string;
  timeoutMs: number;
  fetch: typeof fetch;
  log: Logger;
  clock?: Clock | undefined;
}

/**
 * A backend's POST: `body` as JSON to `e.url` through `postJsonWithRetry`, with the JSON headers and
 * the key; `retry` per call (a readiness probe retries nothing).
 */
export function jsonPoster(e: JsonEndpoint) {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (e.apiKey) headers.authorization = `Bearer ${e.apiKey}`;
  return (body: unknown, retry: RetryPolicy, signal?: AbortSignal): Promise<HttpAnswer> =>
    postJsonWithRetry({
      url: e.url,
      headers,
      body,
      timeoutMs: e.timeoutMs,
      retry,
      fetch: e.fetch,
      log: e.log,
      clock: e.clock,
      signal,
    });
}

/** Upstream error text is kept short: it goes into logs and (with DEBUG) error bodies. */
export function excerpt(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
