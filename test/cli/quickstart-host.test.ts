import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { type Quickstart, runQuickstart } from '../../src/cli/quickstart.js';
import { tempDir } from './helpers.js';

/**
 * `npm start` prints `http://localhost:…` and a key: it listens on loopback only unless HOST says
 * otherwise (`kilde serve` keeps the reference contract's 0.0.0.0). In this process, not spawned:
 * what is tested is the address it binds.
 */
/** The address the listening socket is bound to. */
const bound = (q: Quickstart) => (q.app.server.address() as AddressInfo).address;

describe('npm start (kilde quickstart) binds', () => {
  const started: Quickstart[] = [];
  const dirs: Awaited<ReturnType<typeof tempDir>>[] = [];
  afterAll(async () => {
    for (const q of started) {
      await q.docs.catch(() => undefined);
      await q.app.close();
    }
    for (const d of dirs) await d.remove();
  });

  const start = async (env: Record<string, string>) => {
    const dir = await tempDir('kilde-quickstart-host-');
    dirs.push(dir);
    const out = new PassThrough();
    let printed = '';
    out.on('data', (d: Buffer) => {
      printed += d.toString('utf8');
    });
    const q = await runQuickstart(
      { KILDE_DATA_DIR: dir.dir, PORT: '0', LOG_LEVEL_APP: 'error', ...env },
      out as unknown as NodeJS.WritableStream,
    );
    started.push(q);
    return { q, printed: () => printed };
  };

  it('127.0.0.1 without HOST, and the banner says this machine only', async () => {
    const { q, printed } = await start({});
    expect(bound(q)).toBe('127.0.0.1');
    expect(printed()).toContain('Listening on 127.0.0.1 only: this machine.');
    expect(printed()).toMatch(/Kilde is running at http:\/\/localhost:\d+/);
  });

  it('every interface when HOST=0.0.0.0, and the banner says so', async () => {
    const { q, printed } = await start({ HOST: '0.0.0.0' });
    expect(bound(q)).toBe('0.0.0.0');
    expect(printed()).toContain('Listening on 0.0.0.0 (HOST): reachable from other machines');
  });
});
