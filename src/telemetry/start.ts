import type { Logger } from 'pino';
import type { TracingConfig } from '../config/telemetry.js';

/** What a started service holds while tracing is on: flushing and unregistering at shutdown. */
export interface Tracing {
  shutdown(): Promise<void>;
}

/** Whether the configuration turns tracing on. */
export function tracingWanted(
  config: Pick<TracingConfig, 'OTEL_TRACES_EXPORTER' | 'OTEL_SDK_DISABLED'>,
): boolean {
  return config.OTEL_TRACES_EXPORTER !== 'none' && !config.OTEL_SDK_DISABLED;
}

/**
 * Starts tracing when the configuration asks for it (`OTEL_TRACES_EXPORTER=otlp`); otherwise
 * nothing: the SDK is not imported and every `inSpan` stays a direct call.
 */
export async function startTracing(config: TracingConfig, log: Logger): Promise<Tracing | undefined> {
  if (!tracingWanted(config)) return undefined;
  const sdk = await import('./sdk.js');
  const installed = await sdk.installFromConfig(config, log);
  log.info(
    {
      exporter: config.OTEL_TRACES_EXPORTER,
      url: sdk.tracesUrl(config),
      protocol: config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL,
      sampler: config.OTEL_TRACES_SAMPLER,
      service: config.OTEL_SERVICE_NAME,
    },
    'tracing on',
  );
  return installed;
}
