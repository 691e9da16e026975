import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { compileCacheDir } from '../../src/cli/compile-cache.js';
import { cleanEnv, runCli, tempDir } from './helpers.js';

const dirs: Array<{ remove(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => d.remove()));
});
async function temp(prefix: string): Promise<string> {
  const d = await tempDir(prefix);
  dirs.push(d);
  return d.dir;
}

describe('the compile cache directory', () => {
  it('is the operator’s NODE_COMPILE_CACHE, else the user’s cache directory; NODE_DISABLE_COMPILE_CACHE turns it off', () => {
    expect(compileCacheDir({ NODE_COMPILE_CACHE: '/srv/cache' }, '/home/k')).toBe('/srv/cache');
    expect(compileCacheDir({ XDG_CACHE_HOME: '/xdg' }, '/home/k')).toBe('/xdg/kilde/compile-cache');
    expect(compileCacheDir({}, '/home/k')).toBe('/home/k/.cache/kilde/compile-cache');
    expect(compileCacheDir({ NODE_COMPILE_CACHE: ' ', XDG_CACHE_HOME: '' }, '/home/k')).toBe(
      '/home/k/.cache/kilde/compile-cache',
    );
    expect(compileCacheDir({ NODE_DISABLE_COMPILE_CACHE: '1', NODE_COMPILE_CACHE: '/srv/cache' }, '/h')).toBe(
      undefined,
    );
    // No home: a directory of the user's own under the temp directory, never Node's shared default.
    const bare = compileCacheDir({}, null);
    expect(bare).toBe(join(tmpdir(), `kilde-compile-cache-${process.getuid?.() ?? 'user'}`));
  });
});

describe('`kilde` with the compile cache', () => {
  const probe = fileURLToPath(new URL('../helpers/print-compile-cache.cjs', import.meta.url));

  it('fills the user’s cache, and the extraction workers it starts use it from their own start', async () => {
    const home = await temp('kilde-cc-home-');
    const data = await temp('kilde-cc-data-');
    const log = join(data, 'processes.jsonl');
    await writeFile(log, '');
    const file = join(data, 'note.txt');
    await writeFile(file, 'Compile caches keep bytecode between runs.\n');
    const run = await runCli(
      ['ingest', '-c', 'notes', file],
      cleanEnv({
        HOME: home,
        KILDE_DATA_DIR: join(data, 'kilde'),
        EMBEDDING_PROVIDER: 'none',
        NODE_OPTIONS: `--require ${probe}`,
        KILDE_TEST_COMPILE_CACHE_LOG: log,
      }),
    );
    expect(run.code, run.stderr).toBe(0);
    const cache = join(home, '.cache', 'kilde', 'compile-cache');
    // One directory per Node version and V8 flags, holding the compiled modules.
    const versions = readdirSync(cache);
    expect(versions).toHaveLength(1);
    expect(readdirSync(join(cache, versions[0]!)).length).toBeGreaterThan(10);
    const processes = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pid: number; env: string; enabled: string });
    // The CLI itself turns the cache on after Node started; every worker it started had it at start.
    const [cli, ...workers] = processes;
    expect(cli).toMatchObject({ env: '', enabled: '' });
    expect(workers.length).toBeGreaterThan(0);
    for (const w of workers) expect(w).toMatchObject({ env: cache, enabled: join(cache, versions[0]!) });
  });

  it('stays off with NODE_DISABLE_COMPILE_CACHE', async () => {
    const home = await temp('kilde-cc-off-');
    const run = await runCli(['--version'], cleanEnv({ HOME: home, NODE_DISABLE_COMPILE_CACHE: '1' }));
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(home)).toEqual([]);
  });
});
