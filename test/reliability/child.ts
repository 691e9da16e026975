import { readFile } from 'node:fs/promises';
import { cleanEnv, REPO, Server } from '../cli/helpers.js';

export const KEY = 'reliability-key';
export const AUTH = { authorization: `Bearer ${KEY}` };

/** A real `kilde serve <service>` child process (over the built dist/, as `npm test` builds it). */
export interface Kilde {
  url: string;
  pid: number;
  server: Server;
  /** SIGKILL: no clean-up of any kind runs. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (graceful); resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Resident set size now (bytes), from /proc. */
  rss(): Promise<number>;
}

export async function startKilde(service: string, env: Record<string, string>): Promise<Kilde> {
  const server = Server.start(
    ['serve', service],
    cleanEnv({ API_KEY: KEY, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL_APP: 'info', ...env }),
    REPO,
  );
  const [, url] = await server.waitFor(/"address":"(http:\/\/127\.0\.0\.1:\d+)"/, 60_000);
  const pid = server.child.pid;
  if (url === undefined || pid === undefined) throw new Error(`kilde did not start:\n${server.output}`);
  const exited = new Promise<void>((resolve) => {
    if (server.child.exitCode !== null || server.child.signalCode !== null) resolve();
    else server.child.once('exit', () => resolve());
  });
  return {
    url,
    pid,
    server,
    async kill() {
      server.child.kill('SIGKILL');
      await exited;
    },
    stop: () => server.stop(),
    async rss() {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) * 1024;
    },
  };
}
