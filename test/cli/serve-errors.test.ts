import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/** What a first-time user sees when `kilde serve` cannot listen: one line, no stack, exit 2. */
describe('kilde serve when the port cannot be used', () => {
  let busy: Server;
  let port: number;
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  beforeAll(async () => {
    tmp = await tempDir('kilde-serve-');
    busy = createServer();
    busy.listen(0, '127.0.0.1');
    await once(busy, 'listening');
    port = (busy.address() as { port: number }).port;
  });
  afterAll(async () => {
    busy?.close();
    await tmp?.remove();
  });

  it.each(['agent', 'all'])('serve %s on a taken port names the port and PORT', async (service) => {
    const run = await runCli(
      ['serve', service],
      cleanEnv({ API_KEY: 'k', HOST: '127.0.0.1', PORT: String(port), KILDE_DATA_DIR: `${tmp.dir}/.kilde` }),
      tmp.dir,
    );
    // HOST and PORT are configuration: exit 2 (docs/operations.md, "Exit codes").
    expect(run.code).toBe(2);
    const errors = run.stderr.trim().split('\n');
    expect(errors).toEqual([
      `kilde: port ${port} on 127.0.0.1 is already in use: stop what listens there or choose another port with PORT (e.g. PORT=${port + 1})`,
    ]);
  });
});

/** A replica configured for a shared Redis lock never runs without it (docs/scaling.md). */
describe('kilde serve ingest when REDIS_URL does not answer', () => {
  it('exits 1 with one line naming REDIS_URL', async () => {
    const tmp = await tempDir('kilde-serve-redis-');
    try {
      const run = await runCli(
        ['serve', 'ingest'],
        cleanEnv({
          API_KEY: 'k',
          HOST: '127.0.0.1',
          PORT: '0',
          KILDE_DATA_DIR: `${tmp.dir}/.kilde`,
          EMBEDDING_PROVIDER: 'none',
          EXTRACTION_ENGINE: 'inprocess',
          REDIS_URL: 'redis://127.0.0.1:1',
        }),
        tmp.dir,
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^kilde: Redis \(REDIS_URL\) is unreachable/m);
    } finally {
      await tmp.remove();
    }
  });
});
