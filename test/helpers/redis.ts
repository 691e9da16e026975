import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/**
 * A real `redis-server` (the Debian package `redis-server`; `.ci/run` installs it when it can) on a
 * free loopback port, without persistence. Tests that need it skip, saying so, when it is absent.
 */
export const REDIS_SERVER_MISSING =
  process.env.KILDE_TEST_REDIS !== 'off' &&
  spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0
    ? undefined
    : 'SKIPPED: redis-server is not installed (apt-get install redis-server)';

// Said once per test file that needs it, so a skipped run is never mistaken for a passing one.
if (REDIS_SERVER_MISSING !== undefined) {
  process.stderr.write(
    `kilde tests: ${REDIS_SERVER_MISSING}; the Redis lease and replica tests are skipped\n`,
  );
}

/** A suite title that says why it is skipped when `redis-server` is absent (KILDE_TEST_REDIS=off forces that). */
export function redisSuite(title: string): string {
  return REDIS_SERVER_MISSING === undefined ? title : `${title} — ${REDIS_SERVER_MISSING}`;
}

export interface RedisServer {
  url: string;
  port: number;
  /** A client for the test's own checks. */
  client: Redis;
  process: ChildProcess;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * `port`: a restart on the port of a stopped one (its data is gone: no persistence). `dir`: with
 * persistence instead, an append-only file there written on every command (`appendfsync always`),
 * so a restart on the same port and folder keeps every acknowledged write even after SIGKILL.
 */
export async function startRedis(port?: number, options: { dir?: string } = {}): Promise<RedisServer> {
  port ??= await freePort();
  const persistence = options.dir
    ? ['--dir', options.dir, '--appendonly', 'yes', '--appendfsync', 'always']
    : ['--appendonly', 'no'];
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  // Ready once it answers PING; it may take a while on a loaded machine (the hook's time-out bounds
  // the wait), and fails at once if the server exits.
  for (;;) {
    try {
      if (client.status === 'wait' || client.status === 'end') await client.connect();
      await client.ping();
      break;
    } catch (err) {
      if (child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`redis-server did not start: ${String(err)}\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    client,
    process: child,
    async stop() {
      client.disconnect();
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
