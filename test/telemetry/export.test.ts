import { describe, expect, it } from 'vitest';
import type { TracingConfig } from '../../src/config/telemetry.js';
import { createLogger } from '../../src/http/logger.js';
import { startTracing } from '../../src/telemetry/start.js';
import { inSpan } from '../../src/telemetry/tracing.js';
import { startRecordingServer } from '../fakes/recording-server.js';
import { logSink } from '../helpers/app.js';

const BASE: TracingConfig = {
  OTEL_SDK_DISABLED: false,
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: undefined,
  OTEL_EXPORTER_OTLP_HEADERS: undefined,
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: undefined,
  OTEL_EXPORTER_OTLP_TIMEOUT: 5000,
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: undefined,
  OTEL_SERVICE_NAME: 'kilde-test',
  OTEL_RESOURCE_ATTRIBUTES: undefined,
  OTEL_TRACES_SAMPLER: 'parentbased_always_on',
  OTEL_TRACES_SAMPLER_ARG: undefined,
};

describe('the OTLP exporter as the OTEL_* variables configure it', () => {
  it('posts OTLP/JSON to the traces endpoint with the configured headers and resource', async () => {
    const receiver = await startRecordingServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const logs = logSink();
    try {
      const tracing = await startTracing(
        {
          ...BASE,
          OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/base`,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
          OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=a,authorization=none',
          OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20abc',
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,service.name=ignored',
        },
        createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, logs.stream),
      );
      await inSpan('kilde.search', { 'kilde.search.k': 3 }, async () => undefined);
      await tracing!.shutdown();
      const [sent] = receiver.requests;
      expect(sent?.method).toBe('POST');
      expect(sent?.path).toBe('/base/v1/traces');
      expect(sent?.headers['content-type']).toBe('application/json');
      expect(sent?.headers.authorization).toBe('Bearer abc');
      expect(sent?.headers['x-tenant']).toBe('a');
      const body = JSON.parse(sent!.body) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { scope: { name: string }; spans: { name: string }[] }[];
        }[];
      };
      const resource = Object.fromEntries(
        body.resourceSpans[0]!.resource.attributes.map((a) => [a.key, a.value.stringValue]),
      );
      expect(resource).toMatchObject({ 'service.name': 'kilde-test', 'deployment.environment.name': 'test' });
      expect(body.resourceSpans[0]!.scopeSpans[0]!.scope.name).toBe('kilde');
      expect(body.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name)).toEqual(['kilde.search']);
      expect(logs.lines).toContainEqual(
        expect.objectContaining({ msg: 'tracing on', protocol: 'http/json' }),
      );
    } finally {
      await receiver.close();
    }
  });

  it('a receiver that cannot be reached costs the spans, never the shutdown: a warning says so', async () => {
    const receiver = await startRecordingServer((_req, res) => {
      res.end();
    });
    const url = receiver.url;
    await receiver.close();
    const logs = logSink();
    const tracing = await startTracing(
      { ...BASE, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${url}/v1/traces` },
      createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, logs.stream),
    );
    await inSpan('kilde.search', {}, async () => undefined);
    await expect(tracing!.shutdown()).resolves.toBeUndefined();
    expect(logs.lines).toContainEqual(
      expect.objectContaining({ level: 40, msg: 'tracing: the last spans were not sent' }),
    );
  });
});
