import { z } from 'zod';
import { bool, int, oneOf, optionalOneOf, optionalString, string, url } from './fields.js';

/*
 * Traces (docs/operations.md, "Traces"): the standard OpenTelemetry SDK variables, read here like
 * every other variable and handed to the SDK explicitly. Off by default: with
 * `OTEL_TRACES_EXPORTER=none` the SDK is not even loaded.
 */

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** `OTEL_TRACES_SAMPLER_ARG`: a number in [0, 1] (the ratio of the `*traceidratio` samplers). */
const samplerArg = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v.trim());
    if (!Number.isFinite(n) || n < 0 || n > 1) {
      ctx.addIssue({ code: 'custom', message: `must be a number from 0 to 1, got "${v}"` });
      return z.NEVER;
    }
    return n;
  })
  .meta({
    env: {
      type: 'number',
      default: '(unset)',
      doc: 'The ratio of the `traceidratio` and `parentbased_traceidratio` samplers, from 0 to 1 (unset: 1, every trace).',
    },
  });

export const tracingPiece = {
  OTEL_SDK_DISABLED: bool(
    false,
    'Turns tracing off whatever `OTEL_TRACES_EXPORTER` says (the OpenTelemetry switch).',
  ),
  OTEL_TRACES_EXPORTER: oneOf(
    ['none', 'otlp'],
    'none',
    'Where spans go: `otlp` sends every ingest and search stage as spans to an OTLP/HTTP receiver (Jaeger, Tempo, an OpenTelemetry Collector...); `none` (the default, unlike the OpenTelemetry SDKs) records nothing and loads no SDK. See docs/operations.md, "Traces".',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: url(
    undefined,
    'Base URL of the OTLP/HTTP receiver; traces go to `{endpoint}/v1/traces`. Unset: `http://localhost:4318`.',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(
    undefined,
    'Full URL traces are sent to, as is (no `/v1/traces` added); wins over `OTEL_EXPORTER_OTLP_ENDPOINT`.',
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: oneOf(
    PROTOCOLS,
    'http/protobuf',
    'OTLP encoding over HTTP: protobuf or JSON (gRPC is not offered: every receiver that speaks it also takes OTLP/HTTP on port 4318).',
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optionalOneOf(
    PROTOCOLS,
    'The encoding for traces; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`.',
  ),
  OTEL_EXPORTER_OTLP_HEADERS: optionalString(
    'Headers sent with every export, `key=value` pairs separated by commas, values URL-encoded (e.g. `authorization=Bearer%20abc`).',
  ),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: optionalString(
    'Headers for trace exports, in the same form; each wins over the same key in `OTEL_EXPORTER_OTLP_HEADERS`.',
  ),
  OTEL_EXPORTER_OTLP_TIMEOUT: int(10000, 'Milliseconds one export may take.', { min: 1 }),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: int(
    undefined,
    'Milliseconds one trace export may take; wins over `OTEL_EXPORTER_OTLP_TIMEOUT`.',
    {
      min: 1,
    },
  ),
  OTEL_SERVICE_NAME: string(
    'kilde',
    'The `service.name` of every span (wins over one in `OTEL_RESOURCE_ATTRIBUTES`).',
  ),
  OTEL_RESOURCE_ATTRIBUTES: optionalString(
    'More resource attributes of every span, `key=value` pairs separated by commas, values URL-encoded (e.g. `deployment.environment.name=prod,service.namespace=rag`).',
  ),
  OTEL_TRACES_SAMPLER: oneOf(
    [
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
      'always_on',
      'always_off',
      'traceidratio',
    ],
    'parentbased_always_on',
    'Which traces are recorded. `parentbased_*` follow the caller’s decision in an incoming `traceparent` and apply the named sampler to traces that start here.',
  ),
  OTEL_TRACES_SAMPLER_ARG: samplerArg,
};

export type TracingConfig = z.output<z.ZodObject<typeof tracingPiece>>;
