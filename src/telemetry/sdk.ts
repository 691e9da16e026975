import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  parseKeyPairsIntoRecord,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { TracingConfig } from '../config/telemetry.js';
import { kildeVersion } from '../version.js';
import { setTracingActive } from './tracing.js';

/*
 * The OpenTelemetry SDK, loaded only when tracing is on (`start.ts` imports this module
 * dynamically): the provider, W3C `traceparent`/`baggage` propagation, async context across
 * awaits, and the OTLP/HTTP exporter, all configured from the parsed `OTEL_*` variables.
 */

const { context, DiagLogLevel, diag, propagation, trace } = api;

export interface InstalledTracing {
  provider: TracerProvider;
  /** Flushes what is buffered and unregisters everything (tracing is off again); never throws. */
  shutdown(): Promise<void>;
}

/**
 * Registers a tracer provider with `processors` as the process's, with W3C propagation and an
 * AsyncLocalStorage context, and turns Kilde's spans on. Tests install an in-memory exporter here.
 */
export function installTracing(o: {
  processors: SpanProcessor[];
  sampler?: Sampler;
  attributes?: Record<string, string>;
}): InstalledTracing {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: 'kilde',
      [ATTR_SERVICE_VERSION]: kildeVersion(),
      ...o.attributes,
    }),
    sampler: o.sampler ?? new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: o.processors,
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);
  setTracingActive(true, api);
  let done: Promise<void> | undefined;
  return {
    provider,
    shutdown() {
      done ??= (async () => {
        setTracingActive(false);
        try {
          // A receiver that cannot take the last spans costs them, never the shutdown.
          await provider.shutdown().catch((err: unknown) => diag.warn('the last spans were not sent', err));
        } finally {
          trace.disable();
          propagation.disable();
          context.disable();
          diag.disable();
        }
      })();
      return done;
    },
  };
}

/** The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name. */
export function samplerOf(
  config: Pick<TracingConfig, 'OTEL_TRACES_SAMPLER' | 'OTEL_TRACES_SAMPLER_ARG'>,
): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLER_ARG ?? 1);
  switch (config.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Where traces are sent: the traces endpoint as is, else `{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`. */
export function tracesUrl(
  config: Pick<TracingConfig, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>,
): string {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318';
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** The OTLP/HTTP exporter the configuration names (protobuf or JSON). */
export async function otlpExporter(config: TracingConfig): Promise<SpanExporter> {
  const protocol = config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL;
  const options = {
    url: tracesUrl(config),
    headers: {
      ...parseKeyPairsIntoRecord(config.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseKeyPairsIntoRecord(config.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    timeoutMillis: config.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? config.OTEL_EXPORTER_OTLP_TIMEOUT,
  };
  if (protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(options) as unknown as SpanExporter;
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}

/**
 * Installs tracing as the configuration says: the OTLP exporter behind a batching processor. The
 * SDK's own complaints (a receiver that refuses or cannot be reached: its spans are dropped) go to
 * `log` as warnings, not to the standard error stream.
 */
export async function installFromConfig(config: TracingConfig, log: Logger): Promise<InstalledTracing> {
  const warn = (message: string, ...args: unknown[]) =>
    log.warn({ otel: args.map((a) => (a instanceof Error ? a.message : a)) }, `tracing: ${message}`);
  const quiet = () => undefined;
  diag.setLogger({ error: warn, warn, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.WARN);
  const exporter = await otlpExporter(config);
  return installTracing({
    processors: [new BatchSpanProcessor({ exporter })],
    sampler: samplerOf(config),
    attributes: {
      ...parseKeyPairsIntoRecord(config.OTEL_RESOURCE_ATTRIBUTES),
      [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME,
    },
  });
}
