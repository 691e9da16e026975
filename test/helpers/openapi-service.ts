import { join } from 'node:path';
import type { Service } from '../../src/cli/services.js';
import { createLogger } from '../../src/http/logger.js';
import { logSink } from './app.js';

/**
 * A service configured as the OpenAPI tests read it: every optional part on (knowledge search over
 * `docs`, weather), its data under `dir`, a quiet logger, and its parts created but not started, so
 * nothing connects (`serve worker` requires Redis: a closed port stands in). `extra` adds variables.
 */
export async function openApiParts(service: Service, dir: string, extra: Record<string, string> = {}) {
  const configured = service.configure({
    API_KEY: 'openapi-key',
    KILDE_DATA_DIR: join(dir, service.name),
    EMBEDDING_PROVIDER: 'none',
    MCP_SEARCH_COLLECTIONS: 'docs',
    WEATHER_API_BASE_URL: 'http://127.0.0.1:9',
    WEATHER_API_KEY: 'weather-key',
    ...extra,
    ...(service.name === 'worker' ? { REDIS_URL: 'redis://127.0.0.1:9' } : {}),
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  return { kernel: configured.kernel, log, parts: await configured.create(log) };
}
