import type { Logger } from 'pino';
import type { KernelConfig } from '../config/kernel.js';
import type { Env } from '../config/parse.js';
import { loadTenantKeys } from '../http/access.js';
import { buildApp, type KildeApp, type ServicePart, startParts } from '../http/app.js';
import { createLogger } from '../http/logger.js';
import { serve } from '../http/server.js';
import { startTracing } from '../telemetry/start.js';
import { CliError } from './fail.js';
import { findService, SERVICES } from './services.js';

export interface Running {
  service: string;
  app: KildeApp;
  parts: ServicePart[];
  /** The kernel's view of the parsed configuration. */
  config: KernelConfig;
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
  const configured = def.configure(env);
  const kernel = configured.kernel;
  // The per-tenant keys are configuration too: a bad file stops start-up (exit 2) before any part is built.
  loadTenantKeys(kernel);
  const log = createLogger(kernel);
  // Before the parts and the app: the request spans are registered only while tracing is on.
  const tracing = await startTracing(kernel, log);
  const parts = await configured.create(log);
  const app = await buildApp(kernel, { logger: log, parts });
  // Last of the clean-up: the spans of the requests drained at shutdown are sent too.
  if (tracing) app.addHook('onClose', () => tracing.shutdown());
  try {
    await startParts(parts);
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  let address: string;
  try {
    address = await serve(app, {
      host: kernel.HOST,
      port: kernel.PORT,
      requestTimeoutS: kernel.REQUEST_TIMEOUT,
      graceS: kernel.SHUTDOWN_GRACE,
    });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw listenError(err, kernel.HOST, kernel.PORT);
  }
  log.info({ service: def.name, address }, 'kilde listening');
  for (const part of parts) part.afterListen?.();
  return { service: def.name, app, parts, config: kernel, log, address };
}

/**
 * `npm start` with port 8000 taken is a first-time user's likeliest failure: say what to change.
 * These are configuration errors (HOST, PORT): exit 2.
 */
function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE')
    return new CliError(
      `port ${port} on ${host} is already in use: stop what listens there or choose another port with PORT (e.g. PORT=${port + 1})`,
      2,
    );
  if (code === 'EACCES')
    return new CliError(`not allowed to listen on port ${port}: choose a port above 1023 with PORT`, 2);
  if (code === 'EADDRNOTAVAIL')
    return new CliError(
      `HOST ${host} is not an address of this machine: use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`,
      2,
    );
  return err;
}
