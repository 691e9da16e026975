import type { Logger } from 'pino';
import type { KernelConfig } from '../config/agent.js';
import { type Env, parseConfig } from '../config/parse.js';
import { buildApp, type KildeApp, type ServicePart, startParts } from '../http/app.js';
import { createLogger } from '../http/logger.js';
import { serve } from '../http/server.js';
import { CliError } from './fail.js';
import { findService, SERVICES } from './services.js';

export interface Running {
  service: string;
  app: KildeApp;
  parts: ServicePart[];
  config: Readonly<Record<string, unknown>>;
  log: Logger;
  /** e.g. `http://127.0.0.1:8000`. */
  address: string;
}

/** `kilde serve <service>`: parse the config (one-line errors), build, warm up, listen. */
export async function startService(name: string, env: Env): Promise<Running> {
  const def = findService(name);
  if (!def) {
    const names = [...SERVICES.map((s) => s.name), 'all'].join(', ');
    throw new CliError(`unknown service "${name}"; choose one of ${names}`, 2);
  }
  const config = parseConfig(def.schema, env);
  const kernel = config as unknown as KernelConfig;
  const log = createLogger(kernel);
  const parts = await def.create(config, log);
  const app = await buildApp(kernel, { logger: log, parts });
  try {
    await startParts(parts);
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const address = await serve(app, {
    host: kernel.HOST,
    port: kernel.PORT,
    requestTimeoutS: kernel.REQUEST_TIMEOUT,
    graceS: kernel.SHUTDOWN_GRACE,
  });
  log.info({ service: def.name, address }, 'kilde listening');
  return { service: def.name, app, parts, config, log, address };
}
