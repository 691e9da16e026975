import { Writable } from 'node:stream';
import type { z } from 'zod';
import { parseConfig } from '../../src/config/parse.js';
import { buildApp, type ServicePart } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';

/** Collects pino JSON lines so tests can assert on what was logged. */
export function logSink() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, stream, text: () => lines.map((l) => JSON.stringify(l)).join('\n') };
}

export function testConfig<S extends z.ZodObject>(schema: S, env: Record<string, string>) {
  return parseConfig(schema, { API_KEY: 'test-key', ...env });
}

export async function testApp(config: Parameters<typeof buildApp>[0], parts: ServicePart[]) {
  const sink = logSink();
  const logger = createLogger({ ...config, LOG_LEVEL_APP: 'debug' }, sink.stream);
  const app = await buildApp(config, { logger, parts });
  for (const p of parts) await p.start?.();
  return { app, logs: sink };
}

export const AUTH = { authorization: 'Bearer test-key' };
