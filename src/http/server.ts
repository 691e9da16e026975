import type { KildeApp } from './app.js';

export interface ServeOptions {
  host: string;
  port: number;
  /** Server-side bound on one request, seconds; 0 disables. */
  requestTimeoutS: number;
  /** Seconds to drain in-flight requests on shutdown before forcing exit. */
  graceS: number;
}

/**
 * Listens and wires graceful shutdown: on SIGTERM/SIGINT stop accepting, let in-flight requests
 * finish (up to the grace period), run every part's close (clients, index), then exit.
 */
export async function serve(app: KildeApp, o: ServeOptions): Promise<string> {
  app.server.requestTimeout = o.requestTimeoutS * 1000;
  app.server.headersTimeout = 60_000;
  app.server.keepAliveTimeout = 72_000;
  const address = await app.listen({ host: o.host, port: o.port });
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: draining in-flight requests');
    const force = setTimeout(() => {
      app.log.warn('grace period over, exiting with requests still open');
      process.exit(1);
    }, o.graceS * 1000);
    force.unref();
    // Connections that finish their in-flight request become idle after close() began; close them
    // as they do, instead of waiting for the keep-alive time-out.
    const reaper = setInterval(() => app.server.closeIdleConnections(), 100);
    reaper.unref();
    app.close().then(
      () => {
        app.log.info('closed');
        process.exit(0);
      },
      (err: unknown) => {
        app.log.error({ err }, 'error while closing');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  return address;
}
