import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from './attributes.js';
import { failed, kildeTracer } from './tracing.js';

/*
 * One SERVER span per HTTP request (the parent of every stage span the request runs), continuing
 * the caller's trace when it sends a W3C `traceparent`. Registered by the kernel only while tracing
 * is on (src/http/app.ts); the route handlers run inside the span's context, so the spans their
 * stages start, and the `traceparent` of their outbound calls (src/net/http.ts), belong to it.
 */

interface Traced {
  span: Span;
  ctx: Context;
  ended: boolean;
  /** What the error handler was given, if anything. */
  error?: unknown;
}

const TRACED = Symbol('kilde.traced');
type TracedRequest = FastifyRequest & { [TRACED]?: Traced };

const METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/** Adds the request span hooks to `app`; call before any route is added. */
export function registerRequestSpans(app: FastifyInstance): void {
  app.addHook('onRequest', (request: TracedRequest, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const route = request.routeOptions.url;
    const method = METHODS.has(request.method) ? request.method : '_OTHER';
    const userAgent = request.headers['user-agent'];
    const span = kildeTracer().startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: method,
          [ATTR_URL_PATH]: request.url.split('?')[0] ?? '/',
          [ATTR_URL_SCHEME]: request.protocol,
          [ATTR_SERVER_ADDRESS]: request.hostname,
          [ATTR_CLIENT_ADDRESS]: request.ip,
          [ATTR_NETWORK_PROTOCOL_VERSION]: request.raw.httpVersion,
          'kilde.request.id': request.id,
          ...(route ? { [ATTR_HTTP_ROUTE]: route } : {}),
          ...(typeof userAgent === 'string' ? { [ATTR_USER_AGENT_ORIGINAL]: userAgent } : {}),
        },
      },
      parent,
    );
    const traced: Traced = { span, ctx: trace.setSpan(parent, span), ended: false };
    request[TRACED] = traced;
    // Every log line of the request names its trace, so a backend can go from one to the other.
    const { traceId, spanId } = span.spanContext();
    request.log = request.log.child({ trace_id: traceId, span_id: spanId });
    context.with(traced.ctx, done);
  });

  // The handler runs in the request span's context (hooks before it run in Fastify's own async
  // resources, body parsing among them, where the context of `onRequest` would be lost).
  app.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    route.handler = function tracedHandler(
      this: FastifyInstance,
      request: TracedRequest,
      reply: FastifyReply,
    ) {
      const traced = request[TRACED];
      return traced
        ? context.with(traced.ctx, handler, this, request, reply)
        : handler.call(this, request, reply);
    };
  });

  app.addHook('onError', (request: TracedRequest, _reply, error, done) => {
    const traced = request[TRACED];
    if (traced) traced.error = error;
    done();
  });

  app.addHook('onResponse', (request: TracedRequest, reply, done) => {
    end(request, reply.statusCode);
    done();
  });

  // A client that goes away before the answer gets no onResponse.
  app.addHook('onRequestAbort', (request: TracedRequest, done) => {
    const traced = request[TRACED];
    if (traced && !traced.ended) traced.span.setAttribute(ATTR_ERROR_TYPE, 'aborted');
    end(request, undefined);
    done();
  });
}

function end(request: TracedRequest, status: number | undefined): void {
  const traced = request[TRACED];
  if (!traced || traced.ended) return;
  traced.ended = true;
  if (status !== undefined) {
    traced.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    const code = (traced.error as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string') traced.span.setAttribute('kilde.error.code', code);
    // A server span is an error for 5xx only; a 4xx is the caller's (OpenTelemetry HTTP conventions).
    if (status >= 500) {
      if (traced.error !== undefined) failed(traced.span, traced.error);
      else {
        traced.span.setAttribute(ATTR_ERROR_TYPE, String(status));
        traced.span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
  }
  traced.span.end();
}
