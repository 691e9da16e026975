import type * as OtelApi from '@opentelemetry/api';
import type {
  SpanKind as ApiSpanKind,
  SpanOptions as ApiSpanOptions,
  Attributes,
  AttributeValue,
  Span,
  SpanContext,
  Tracer,
} from '@opentelemetry/api';
import { kildeVersion } from '../version.js';
import { ATTR_ERROR_TYPE } from './attributes.js';

/*
 * The spans of every ingest and search stage (docs/operations.md, "Traces"). Code that marks a
 * stage imports only this module; the SDK, and with it `@opentelemetry/api`, is loaded and
 * registered by `sdk.ts` when `OTEL_TRACES_EXPORTER=otlp`, which hands the API to this module
 * (`otelApi`). Until then `inSpan` is a flag test and a direct call: nothing is loaded, created,
 * timed or recorded (a `kilde` command does not load the API's modules).
 *
 * Attributes never hold document or query text: a span goes to whichever backend the operator
 * named, often shared and kept longer than the index, so what was searched and what was read stay
 * out; ids, scores, counts, collections and versions say where the time went.
 */

let active = false;
let cached: Tracer | undefined;
let api: typeof OtelApi | undefined;

/** Whether spans are recorded (a tracer provider was installed by `installTracing`). */
export function tracingActive(): boolean {
  return active;
}

/**
 * Set by `installTracing` (sdk.ts), which passes the OpenTelemetry API it loaded, and its undoing;
 * nothing else turns tracing on.
 */
export function setTracingActive(on: boolean, otel?: typeof OtelApi): void {
  active = on;
  cached = undefined;
  if (otel) api = otel;
}

/** The OpenTelemetry API the SDK loaded; only while `tracingActive()` (every span path checks it first). */
export function otelApi(): typeof OtelApi {
  if (!api) throw new Error('tracing is off: the OpenTelemetry API was not loaded (sdk.ts loads it)');
  return api;
}

/** The API's `SpanKind` values, without loading the API. */
export const SpanKind = {
  INTERNAL: 0,
  SERVER: 1,
  CLIENT: 2,
  PRODUCER: 3,
  CONSUMER: 4,
} as const satisfies Record<string, ApiSpanKind>;

/** Kilde's tracer (instrumentation scope `kilde`, with the package version). */
export function kildeTracer(): Tracer {
  cached ??= otelApi().trace.getTracer('kilde', kildeVersion());
  return cached;
}

/** How a span starts: its kind (INTERNAL unless said), a new trace (`root`), links to other spans. */
export type SpanOptions = Pick<ApiSpanOptions, 'kind' | 'root' | 'links'>;

/**
 * Runs `fn` inside a span named `name` (the active span is its parent; every span it starts is its
 * child): ended when `fn` settles, marked as an error (`error.type`: the `KildeError` code or the
 * error's name) when it throws. With tracing off `fn` runs as it is, with no span.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
  options: SpanOptions = {},
): Promise<T> {
  if (!active) return fn(undefined);
  return kildeTracer().startActiveSpan(
    name,
    { ...options, attributes, kind: options.kind ?? SpanKind.INTERNAL },
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        failed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

const origins = new WeakMap<object, SpanContext>();

/**
 * Remembers the span `item` was handed over in (a file joining a shared pipeline pass), so the
 * span of the work done for many such items (`inBatchSpan`) links back to each. Returns `item`.
 */
export function withOrigin<T extends object>(item: T): T {
  if (!active) return item;
  const origin = otelApi().trace.getActiveSpan()?.spanContext();
  if (origin) origins.set(item, origin);
  return item;
}

/**
 * `inSpan` for work done once for many requests' items (a pipeline pass over several files): a
 * trace of its own, linked to the span each item came from (`withOrigin`).
 */
export function inBatchSpan<T>(
  name: string,
  items: readonly object[],
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!active) return fn(undefined);
  const links = items.flatMap((item) => {
    const origin = origins.get(item);
    return origin ? [{ context: origin }] : [];
  });
  return inSpan(name, attributes, fn, { root: true, links });
}

/** Marks `span` as failed with `err`: status ERROR, `error.type`, and the exception as an event. */
export function failed(span: Span, err: unknown): void {
  const type = errorType(err);
  span.setAttribute(ATTR_ERROR_TYPE, type);
  if (err instanceof Error) span.recordException(err);
  span.setStatus({
    code: otelApi().SpanStatusCode.ERROR,
    message: err instanceof Error ? err.message : String(err),
  });
}

function errorType(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const name = (err as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '') return name;
  }
  return '_OTHER';
}

/** How many hits a span lists by id and score (the rest are counted). */
export const LISTED_HITS = 10;

/**
 * A result list as attributes: `kilde.hits.count`, and the first `LISTED_HITS` hits' ids and
 * scores in order (`kilde.hits.ids`, `kilde.hits.scores`).
 */
export function hitAttributes(hits: ReadonlyArray<{ id: string; score: number }>): Attributes {
  const listed = hits.slice(0, LISTED_HITS);
  return {
    'kilde.hits.count': hits.length,
    'kilde.hits.ids': listed.map((h) => h.id),
    'kilde.hits.scores': listed.map((h) => h.score),
  };
}

/** Sets `attributes` on `span` when there is one (tracing on), skipping undefined values. */
export function annotate(
  span: Span | undefined,
  attributes: Record<string, AttributeValue | undefined>,
): void {
  if (!span) return;
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) span.setAttribute(k, v);
}

/**
 * `inSpan` for a stage that answers a hit list: the span gets the list's `hitAttributes`.
 * With tracing off, `fn()` as it is.
 */
export function hitsSpan<T extends ReadonlyArray<{ id: string; score: number }>>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T> | T,
): Promise<T> {
  if (!active) return Promise.resolve(fn());
  return inSpan(name, attributes, async (span) => {
    const hits = await fn();
    span?.setAttributes(hitAttributes(hits));
    return hits;
  });
}
