import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { KildeError } from '../http/errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt (EMBEDDING_MAX_RETRIES). */
  maxRetries: number;
  /** First back-off; doubles per retry. */
  baseDelayMs: number;
  /** Upper bound of one wait, also for a server's `Retry-After`. */
  maxDelayMs: number;
}

export const DEFAULT_BACKOFF = { baseDelayMs: 500, maxDelayMs: 30_000 } as const;

export interface PostJsonRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  log: Logger;
  signal?: AbortSignal | undefined;
}

export interface HttpAnswer {
  status: number;
  text: string;
  /** Requests sent, retries included. */
  attempts: number;
}

/** Transient answers worth another try: overload and server-side failures (not 501/505, which are permanent). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status !== 501 && status !== 505);
}

/** `Retry-After` as milliseconds to wait: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * POSTs JSON, retrying 429/5xx answers, network errors and time-outs up to `maxRetries` times with
 * exponential back-off (with jitter, so many workers don't retry in lock-step), or exactly the
 * server's `Retry-After` when it sends one; every wait is capped at `maxDelayMs`. Other answers,
 * 2xx and 4xx alike, come back to the caller after one attempt. The caller's abort stops at once.
 */
export async function postJsonWithRetry(r: PostJsonRequest): Promise<HttpAnswer> {
  const payload = JSON.stringify(r.body);
  for (let attempt = 0; ; attempt++) {
    const timeout = AbortSignal.timeout(r.timeoutMs);
    const signal = r.signal ? AbortSignal.any([r.signal, timeout]) : timeout;
    let failure: string;
    let retryAfter: number | undefined;
    let cause: unknown;
    try {
      const res = await r.fetch(r.url, { method: 'POST', headers: r.headers, body: payload, signal });
      const text = await res.text();
      if (!isRetryableStatus(res.status) || attempt >= r.retry.maxRetries) {
        return { status: res.status, text, attempts: attempt + 1 };
      }
      failure = `HTTP ${res.status}`;
      retryAfter = parseRetryAfter(res.headers.get('retry-after'));
    } catch (err) {
      if (r.signal?.aborted) throw r.signal.reason;
      cause = err;
      failure = timeout.aborted ? `no answer within ${r.timeoutMs / 1000} s` : 'unreachable';
      if (attempt >= r.retry.maxRetries) {
        throw new KildeError(
          'EMBEDDING_FAILED',
          502,
          `embedding endpoint ${failure} after ${attempt + 1} attempt(s): POST ${r.url}`,
          { cause },
        );
      }
    }
    const exponential = r.retry.baseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
    const delayMs = Math.round(Math.min(r.retry.maxDelayMs, retryAfter ?? exponential));
    r.log.warn(
      { url: r.url, attempt: attempt + 1, failure, delayMs, retryAfter: retryAfter !== undefined },
      'embedding request failed; retrying',
    );
    await sleep(delayMs, undefined, r.signal ? { signal: r.signal } : undefined).catch((err: unknown) => {
      throw r.signal?.aborted ? r.signal.reason : err;
    });
  }
}
