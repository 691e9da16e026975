import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/**
 * The exit-code contract (docs/operations.md, "Exit codes"): 0 done, 1 the work failed, 2 usage or
 * configuration, each failure one line on stderr naming the cause and what to do.
 */
describe('kilde exit codes and one-line errors', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    tmp = await tempDir('kilde-exit-');
    env = cleanEnv({ KILDE_DATA_DIR: join(tmp.dir, '.kilde') });
    await writeFile(join(tmp.dir, 'notes.md'), '# Notes\n\nThe ferry to Samsø leaves at nine.\n');
  });
  afterAll(() => tmp?.remove());

  const oneLine = (stderr: string) => stderr.trim().split('\n');

  it('usage errors exit 2 with one line saying where the usage is', async () => {
    const missing = await runCli(['search', 'ferry'], env, tmp.dir);
    expect(missing.code).toBe(2);
    expect(oneLine(missing.stderr)).toEqual([
      "kilde: required option '-c, --collection <name>' not specified (usage: kilde search --help)",
    ]);
    const unknown = await runCli(['documents', 'list', '-c', 'a', '--bogus'], env, tmp.dir);
    expect(unknown.code).toBe(2);
    expect(oneLine(unknown.stderr)).toEqual([
      "kilde: unknown option '--bogus' (usage: kilde documents --help)",
    ]);
    const bare = await runCli(['documents'], env, tmp.dir);
    expect(bare.code).toBe(2);
    expect(oneLine(bare.stderr)).toEqual([
      'kilde: documents needs a command (usage: kilde documents --help)',
    ]);
  });

  it('deleting a file id the index does not hold exits 1, and a broken embedder is one line', async () => {
    const ingest = await runCli(['ingest', 'notes.md', '-c', 'notes'], env, tmp.dir);
    expect(ingest.code, ingest.stderr).toBe(0);
    const del = await runCli(['documents', 'delete', 'no-such-file'], env, tmp.dir);
    expect(del.code).toBe(1);
    expect(del.stdout).toBe('');
    expect(oneLine(del.stderr)).toEqual([
      `kilde: no document "no-such-file" in ${join(tmp.dir, '.kilde', 'lancedb')}: nothing was deleted (kilde documents list -c <collection> shows the file ids)`,
    ]);
    const port = await closedPort();
    const search = await runCli(
      ['search', 'ferry', '-c', 'notes'],
      {
        ...env,
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_API_BASE_URL: `http://127.0.0.1:${port}`,
        EMBEDDING_DIM: '8',
        EMBEDDING_MODEL: 'm',
      },
      tmp.dir,
    );
    expect(search.code).toBe(1);
    expect(oneLine(search.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^kilde: search: Embedding failed: embedding endpoint unreachable .*127\\.0\\.0\\.1:${port}`,
        ),
      ),
    ]);
  });

  it('a VECTORDB_URI naming a file, and an unreadable API_KEYS_FILE, are configuration errors (2)', async () => {
    const file = join(tmp.dir, 'a-file');
    await writeFile(file, 'not an index');
    const lance = await runCli(['search', 'ferry', '-c', 'notes'], { ...env, VECTORDB_URI: file }, tmp.dir);
    expect(lance.code).toBe(2);
    expect(oneLine(lance.stderr)).toEqual([
      `kilde: Configuration error: VECTORDB_URI ${file} is a file, not a directory: point VECTORDB_URI (or KILDE_DATA_DIR) at a folder for the index`,
    ]);
    const keys = await runCli(
      ['serve', 'retrieve'],
      {
        ...env,
        API_KEY: 'k',
        PORT: '0',
        EMBEDDING_PROVIDER: 'none',
        API_KEYS_FILE: join(tmp.dir, 'no-keys.json'),
      },
      tmp.dir,
    );
    expect(keys.code).toBe(2);
    expect(oneLine(keys.stderr)).toEqual([
      expect.stringMatching(
        /^kilde: Configuration error: API_KEYS_FILE cannot be read \(ENOENT.*\): point it at a readable JSON file or unset it$/,
      ),
    ]);
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
