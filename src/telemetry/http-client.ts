import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from './attributes.js';
import { failed, kildeTracer, otelApi, SpanKind } from './tracing.js';

/**
 * One CLIENT span around an outbound request (src/net/http.ts, the one path every upstream call
 * takes: models, extraction sidecars, Qdrant), with the W3C `traceparent` of that span added to
 * the request's headers, so the upstream's own spans join the trace. Call only while tracing is on.
 * `url.full` is sent without its query and credentials.
 */
export function inClientSpan<T extends { status: number }>(
  method: string,
  url: string,
  attempt: number,
  headers: Readonly<Record<string, string>> | undefined,
  send: (headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  const { context, propagation, trace, SpanStatusCode } = otelApi();
  const target = parse(url);
  const span = kildeTracer().startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      ...(target
        ? {
            [ATTR_SERVER_ADDRESS]: target.hostname,
            [ATTR_SERVER_PORT]: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
            [ATTR_URL_FULL]: `${target.origin}${target.pathname}`,
          }
        : {}),
      ...(attempt > 1 ? { [ATTR_HTTP_REQUEST_RESEND_COUNT]: attempt - 1 } : {}),
    },
  });
  const ctx = trace.setSpan(context.active(), span);
  const sent: Record<string, string> = { ...headers };
  propagation.inject(ctx, sent);
  return context.with(ctx, async () => {
    try {
      const answer = await send(sent);
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, answer.status);
      if (answer.status >= 400) {
        span.setAttribute(ATTR_ERROR_TYPE, String(answer.status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return answer;
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function parse(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/**
 * `fetch` with a CLIENT span and the `traceparent` header per request, for a library that makes its
 * own requests (the `ai` SDK's model calls in the agentic loop).
 */
export function tracedFetch(inner: typeof fetch): typeof fetch {
  return ((input: string | URL | Request, init?: RequestInit) => {
    const request = input instanceof Request ? input : undefined;
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init?.method ?? request?.method ?? 'GET';
    const headers = Object.fromEntries(new Headers(init?.headers ?? request?.headers));
    return inClientSpan(method, url, 1, headers, (sent) => inner(input, { ...init, headers: sent }));
  }) as typeof fetch;
}
