import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { tempDir } from '../cli/helpers.js';
import { logSink } from './app.js';

export interface ServeAll {
  app: KildeApp;
  close(): Promise<void>;
}

/**
 * `kilde serve all` in process as the CLI composes it, over its own temporary data directory
 * (removed on `close()`), with `env` as its environment; warnings only in its log.
 */
export async function startServeAll(env: Record<string, string>, prefix = 'kilde-all-'): Promise<ServeAll> {
  const tmp = await tempDir(prefix);
  const config = parseConfig(allSchema, { KILDE_DATA_DIR: tmp.dir, ...env });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log);
  const app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  return {
    app,
    async close() {
      await app.close();
      await tmp.remove();
    },
  };
}
