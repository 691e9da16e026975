import { pino } from 'pino';
import { z } from 'zod';
import { embeddingPiece } from '../../src/config/index-settings.js';
import { parseConfig } from '../../src/config/parse.js';
import type { EmbeddingSettings } from '../../src/embed/create-dense.js';
import { logSink } from '../helpers/app.js';

/** EMBEDDING_* settings parsed from env strings, exactly as a service would get them. */
export function embeddingConfig(env: Record<string, string>): EmbeddingSettings {
  return parseConfig(z.object(embeddingPiece), env);
}

export function testLogger() {
  const sink = logSink();
  return { log: pino({ level: 'debug' }, sink.stream), logs: sink };
}

/** Fast back-off for tests; Retry-After is still honoured up to the cap. */
export const FAST_BACKOFF = { baseDelayMs: 10, maxDelayMs: 5_000 };
