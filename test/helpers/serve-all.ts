import type { AddressInfo } from 'node:net';
import type { Writable } from 'node:stream';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { tempDir } from '../cli/helpers.js';
import { uploadFile } from '../ingest/helpers/harness.js';
import { logSink } from './app.js';

export interface ServeAll {
  app: KildeApp;
  /** `http://127.0.0.1:<port>` with `listen`; empty otherwise (use `app.inject`). */
  url: string;
  close(): Promise<void>;
}

export interface ServeAllOptions {
  /** Name prefix of the temporary data directory. */
  prefix?: string;
  /** Where the log goes, from level info (for tests that read log lines); by default warnings only, dropped. */
  logs?: { stream: Writable };
  /** Listen on a free local port, for clients that need a socket (an MCP client's `fetch`). */
  listen?: boolean;
}

/**
 * `kilde serve all` in process as the CLI composes it, over its own temporary data directory
 * (removed on `close()`), with `env` as its environment.
 */
export async function startServeAll(
  env: Record<string, string>,
  options: string | ServeAllOptions = {},
): Promise<ServeAll> {
  const o = typeof options === 'string' ? { prefix: options } : options;
  const tmp = await tempDir(o.prefix ?? 'kilde-all-');
  const config = parseConfig(allSchema, { KILDE_DATA_DIR: tmp.dir, ...env });
  const log = o.logs
    ? createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, o.logs.stream)
    : createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log);
  const app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  let url = '';
  if (o.listen) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  }
  return {
    app,
    url,
    async close() {
      await app.close();
      await tmp.remove();
    },
  };
}

/** Uploads `content` as `<fileId>.md` into `collection` with PUT /api/v1/ingest and key `key`; expects 200. */
export function putMarkdown(app: KildeApp, key: string, fileId: string, collection: string, content: string) {
  return uploadFile(
    app,
    { file_id: fileId, collection_name: collection, user_id: 'u1' },
    { name: `${fileId}.md`, content, type: 'text/markdown' },
    { authorization: `Bearer ${key}` },
  );
}
