import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/**
 * `kilde ingest --url` is a client of a server: at each start it loads the ingest command and the
 * jobs client only, not the embedded index, its pipeline, the logger or the other commands
 * (src/cli/main.ts `COMMANDS`; ≈ 45 ms of its CPU for one file, docs/performance.md).
 */
describe('the packages kilde ingest --url loads', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const hook = new URL('../helpers/record-packages.mjs', import.meta.url).href;

  beforeAll(async () => {
    tmp = await tempDir('kilde-url-lean-');
    await writeFile(join(tmp.dir, 'ferry.md'), '# Ferries\n\nThe ferry to Samsø leaves at nine.\n');
  });
  afterAll(() => tmp?.remove());

  it('no index, pipeline, logger or server packages, up to the request it could not send', async () => {
    const file = join(tmp.dir, 'packages.txt');
    await writeFile(file, '');
    const env = cleanEnv({
      KILDE_DATA_DIR: join(tmp.dir, 'data'),
      KILDE_API_KEY: 'test-key',
      NODE_OPTIONS: `--import ${hook}`,
      KILDE_TEST_PACKAGES_FILE: file,
    });
    // Port 9 (discard): nothing listens, so the run ends at its first request, as a client would.
    const run = await runCli(
      ['ingest', 'ferry.md', '-c', 'lean', '--url', 'http://127.0.0.1:9'],
      env,
      tmp.dir,
    );
    expect(run.stderr).toContain('cannot reach http://127.0.0.1:9');
    const packages = new Set((await readFile(file, 'utf8')).split('\n').filter(Boolean));
    expect(packages).toContain('commander');
    for (const name of [
      '@lancedb/lancedb',
      'apache-arrow',
      'pino',
      'fastify',
      'fastify-type-provider-zod',
      'mammoth',
    ]) {
      expect(packages, name).not.toContain(name);
    }
  });
});
