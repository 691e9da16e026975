import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { type InstalledTracing, installTracing } from '../../src/telemetry/sdk.js';

/** Tracing on, every span kept in memory as it ends (the SDK's own exporter for tests). */
export function traceInMemory(): { exporter: InMemorySpanExporter; tracing: InstalledTracing } {
  const exporter = new InMemorySpanExporter();
  const tracing = installTracing({ processors: [new SimpleSpanProcessor({ exporter })] });
  return { exporter, tracing };
}

/** A caller's W3C `traceparent`: version 00, a fixed trace id, its span id, sampled. */
export const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
export const CALLER_SPAN = '00f067aa0ba902b7';
export const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

/** The spans of one trace. */
export function traceOf(spans: readonly ReadableSpan[], traceId: string): ReadableSpan[] {
  return spans.filter((s) => s.spanContext().traceId === traceId);
}

/**
 * A trace as indented lines, one per span (`name`, children under their parent in start order):
 * what an operator's tracing backend draws.
 */
export function renderTree(
  spans: readonly ReadableSpan[],
  show: (s: ReadableSpan) => string = (s) => s.name,
) {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const children = new Map<string | undefined, ReadableSpan[]>();
  for (const s of spans) {
    const parent = s.parentSpanContext?.spanId;
    const key = parent && ids.has(parent) ? parent : undefined;
    children.set(key, [...(children.get(key) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    const list = [...(children.get(parent) ?? [])].sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    for (const s of list) {
      lines.push(`${'  '.repeat(depth)}${show(s)}`);
      walk(s.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

/** The one span named `name` (fails when there are none or several). */
export function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`expected one ${name} span, found ${found.length}`);
  return found[0]!;
}

/** The span's parent among `spans`. */
export function parentOf(spans: readonly ReadableSpan[], span: ReadableSpan): ReadableSpan | undefined {
  const id = span.parentSpanContext?.spanId;
  return spans.find((s) => s.spanContext().spanId === id);
}
