import pino from 'pino';
import { expect } from 'vitest';
import { extractionSchema } from '../../src/config/extraction.js';
import { parseConfig } from '../../src/config/parse.js';
import { KildeError } from '../../src/errors.js';

export { DOCUMENTS as DOCS } from '../fixtures/index.js';
export const silent = pino({ level: 'silent' });

export function settings(env: Record<string, string> = {}) {
  return parseConfig(extractionSchema, env);
}

export async function failure(promise: Promise<unknown>): Promise<KildeError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KildeError);
  return err as KildeError;
}

/** A loopback port nothing listens on. */
export async function closedPortUrl(): Promise<string> {
  const { createServer } = await import('node:net');
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}`;
}
