import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { startTracing } from '../../src/telemetry/start.js';
import { tracingActive } from '../../src/telemetry/tracing.js';

const SRC = new URL('../../src/', import.meta.url).pathname;
const SDK =
  /from '@opentelemetry\/(sdk-trace|context-async-hooks|core|resources|semantic-conventions|exporter-trace-otlp-[a-z]+)'/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('tracing off costs nothing', () => {
  it('only src/telemetry/sdk.ts imports the SDK (and the conventions package), and start.ts loads it only when tracing is on', () => {
    const importers = sources(SRC)
      .filter((f) => SDK.test(readFileSync(f, 'utf8')))
      .map((f) => f.slice(SRC.length));
    expect(importers).toEqual(['telemetry/sdk.ts']);
    const start = readFileSync(join(SRC, 'telemetry/start.ts'), 'utf8');
    expect(start).toContain("await import('./sdk.js')");
    expect(start).not.toMatch(/^import .*'\.\/sdk\.js'/m);
  });

  it('outside the server’s request spans only sdk.ts loads the API: the rest import its types, so a `kilde` command with tracing off loads none of its modules', () => {
    const API = /^import (?!type )[^;]*from '@opentelemetry\/api';/m;
    const importers = sources(SRC)
      .filter((f) => API.test(readFileSync(f, 'utf8')))
      .map((f) => f.slice(SRC.length))
      .sort();
    expect(importers).toEqual(['telemetry/http-server.ts', 'telemetry/sdk.ts']);
  });

  it('OTEL_TRACES_EXPORTER=none (the default) installs nothing', async () => {
    const config = {
      OTEL_SDK_DISABLED: false,
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TIMEOUT: 10000,
      OTEL_SERVICE_NAME: 'kilde',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    } as const;
    expect(await startTracing(config as never, pino({ enabled: false }))).toBeUndefined();
    expect(tracingActive()).toBe(false);
    // The API's own no-op provider: no SDK provider was registered.
    expect(trace.getTracerProvider().constructor.name).toBe('ProxyTracerProvider');
    expect(trace.getTracer('kilde').startSpan('x').isRecording()).toBe(false);
  });
});

describe('the attribute names', () => {
  it('are the semantic conventions’ own', async () => {
    const ours = await import('../../src/telemetry/attributes.js');
    const semconv = (await import('@opentelemetry/semantic-conventions')) as Record<string, unknown>;
    for (const [name, value] of Object.entries(ours)) expect(value, name).toBe(semconv[name]);
  });
});
