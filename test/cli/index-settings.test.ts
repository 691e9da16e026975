import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli, Server, tempDir } from './helpers.js';

/**
 * Settings that belong to the index live in it (docs/operations.md, "Settings recorded in the
 * index"): a server started with KEEP_VERSIONS=3 records it, and a local `kilde` over the same
 * index keeps versions as the server does; a local command whose own explicit KEEP_VERSIONS
 * contradicts it refuses, changing nothing.
 */
interface Versions {
  versions: { version: string; live: boolean }[];
}

describe('settings recorded in the index', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let data: string;
  const KEY = 'settings-key';

  beforeAll(async () => {
    tmp = await tempDir('kilde-index-settings-');
    data = join(tmp.dir, '.kilde');
  });
  afterAll(() => tmp?.remove());

  const local = (extra: Record<string, string> = {}) => cleanEnv({ KILDE_DATA_DIR: data, ...extra });
  const versions = async () => {
    const run = await runCli(['documents', 'versions', 'notes', '-c', 'kept', '--json'], local(), tmp.dir);
    expect(run.code, run.stderr).toBe(0);
    return (JSON.parse(run.stdout) as Versions).versions;
  };

  it('a local restore keeps the versions the server keeps; a contradicting KEEP_VERSIONS refuses', {
    timeout: 180_000,
  }, async () => {
    const probe = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => probe.once('listening', r));
    const port = (probe.address() as { port: number }).port;
    probe.close();
    const server = Server.start(
      ['serve', 'all'],
      cleanEnv({
        API_KEY: KEY,
        HOST: '127.0.0.1',
        PORT: String(port),
        KILDE_DATA_DIR: data,
        KEEP_VERSIONS: '3',
      }),
      tmp.dir,
    );
    try {
      await server.waitFor(/kilde listening|listening/);
      for (const n of [1, 2, 3, 4]) {
        const form = new FormData();
        form.set('file_id', 'notes');
        form.set('collection_name', 'kept');
        form.set('user_id', 'u');
        form.set('file', new Blob([`# Notes\n\nVersion ${n} talks about herons number ${n}.\n`]), 'notes.md');
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/ingest`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${KEY}` },
          body: form,
        });
        expect(res.status, await res.text()).toBe(200);
      }
    } finally {
      await server.stop();
    }
    const before = await versions();
    expect(before).toHaveLength(4);

    // The CLI's own KEEP_VERSIONS, set to something else, is refused: nothing is deleted.
    const oldest = before.at(-1)!.version;
    const refused = await runCli(
      ['documents', 'restore', 'notes', oldest, '-c', 'kept'],
      local({ KEEP_VERSIONS: '0' }),
      tmp.dir,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('KEEP_VERSIONS=0 contradicts the index');
    expect(refused.stderr).toContain('KEEP_VERSIONS=3');
    expect(await versions()).toHaveLength(4);

    // Unset, it is the index's: the restore keeps the replaced version, and all four stay.
    const restored = await runCli(['documents', 'restore', 'notes', oldest, '-c', 'kept'], local(), tmp.dir);
    expect(restored.code, restored.stderr).toBe(0);
    const after = await versions();
    expect(after).toHaveLength(4);
    expect(after.find((v) => v.live)?.version).toBe(oldest);
  });
});
