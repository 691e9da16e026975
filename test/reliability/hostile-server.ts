import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Clock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { logSink } from '../helpers/app.js';

/** `--long` (npm run test:reliability -- --long) sets this: hostile documents at full size. */
export const LONG = process.env.KILDE_RELIABILITY_LONG === '1';

const AUTH = { authorization: 'Bearer k' };

export interface HostileServer {
  url: string;
  app: KildeApp;
  dir: string;
  logs: ReturnType<typeof logSink>;
  close(): Promise<void>;
}

/** `kilde serve all` in this process on a real loopback port, embedded index in a temp dir. */
export async function startServer(env: Record<string, string> = {}, clock?: Clock): Promise<HostileServer> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-hostile-'));
  const config = parseConfig(allSchema, { API_KEY: 'k', KILDE_DATA_DIR: dir, ...env });
  const logs = logSink();
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, logs.stream);
  const all = await composeAll(config, log, clock ? { clock } : {});
  const app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: address,
    app,
    dir,
    logs,
    async close() {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Answer {
  status: number;
  body: { status?: boolean; code?: string; error?: string; chunks_count?: number };
}

/** `PUT /api/v1/ingest` with the file as a multipart upload, over the socket. */
export async function upload(server: HostileServer, path: string, fileId = basename(path)): Promise<Answer> {
  const form = new FormData();
  form.set('file_id', fileId);
  form.set('collection_name', 'hostile');
  form.set('user_id', 'tester');
  form.set('file', new Blob([await readFile(path)]), basename(path));
  const res = await fetch(`${server.url}/api/v1/ingest`, { method: 'PUT', headers: AUTH, body: form });
  return { status: res.status, body: (await res.json()) as Answer['body'] };
}

export interface Responsiveness {
  /** Requests answered while the job was still running. */
  health: number;
  ready: number;
  search: number;
  /** Requests that failed or answered other than 200. */
  failed: number;
  /** What each failed request was and what it got (`ready 503 {...}`), for the assertion's message. */
  failures?: string[];
  /** Highest resident set size seen, bytes. */
  peakRss: number;
}

/**
 * Sends `/health`, `/health/ready` and `/search` in a loop while `job` runs and counts those
 * answered before it settles. A blocked event loop answers none of them until the job is done.
 * `until`, when given, keeps the loop going (and the job running) until it returns true.
 */
export async function whileRunning<T>(
  server: HostileServer,
  job: Promise<T>,
  onProgress?: (r: Responsiveness) => void,
): Promise<{ result: T; during: Responsiveness }> {
  let settled = false;
  const watched = job.finally(() => {
    settled = true;
  });
  const failures: string[] = [];
  const during: Responsiveness = { health: 0, ready: 0, search: 0, failed: 0, peakRss: 0, failures };
  const probe = async (name: 'health' | 'ready' | 'search', init: () => Promise<Response>) => {
    try {
      const res = await init();
      const body = await res.text();
      if (res.status !== 200) {
        during.failed++;
        failures.push(`${name} ${res.status} ${body.slice(0, 300)}`);
      } else if (!settled) during[name]++;
    } catch (err) {
      during.failed++;
      failures.push(`${name} ${String(err)} ${String((err as Error).cause ?? '')}`);
    }
  };
  while (!settled) {
    await Promise.all([
      probe('health', () => fetch(`${server.url}/health`)),
      probe('ready', () => fetch(`${server.url}/health/ready`)),
      probe('search', () =>
        fetch(`${server.url}/search`, {
          method: 'POST',
          headers: { ...AUTH, 'content-type': 'application/json' },
          body: JSON.stringify({ queries: ['ordinary report'], collection_names: ['hostile'], k: 3 }),
        }),
      ),
    ]);
    during.peakRss = Math.max(during.peakRss, process.memoryUsage.rss());
    onProgress?.(during);
  }
  return { result: await watched, during };
}
