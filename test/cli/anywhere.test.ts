import { once } from 'node:events';
import { mkdir, open, readdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runCli, tempDir } from './helpers.js';

/**
 * The CLI as a user meets it from different folders: one index (in the user's home unless
 * KILDE_DATA_DIR says otherwise), file ids that do not depend on the folder, and failures that say
 * what went wrong.
 */
describe('the CLI from any folder', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: NodeJS.ProcessEnv;
  const home = () => join(tmp.dir, 'home');
  const a = () => join(tmp.dir, 'a');
  const b = () => join(tmp.dir, 'b');

  beforeAll(async () => {
    tmp = await tempDir('kilde-anywhere-');
    for (const d of [home(), a(), b(), join(a(), 'notes')]) await mkdir(d, { recursive: true });
    await writeFile(join(a(), 'notes', 'ferry.md'), '# Ferries\n\nThe ferry to Samsø leaves at nine.\n');
    // No KILDE_DATA_DIR: the index is found through the home directory, wherever the command runs.
    env = cleanEnv({ HOME: home() });
  });
  afterAll(() => tmp?.remove());

  it('ingests in one folder and searches from another: the same index, in ~/.kilde', async () => {
    const ingest = await runCli(['ingest', 'notes', '-c', 'Møde noter'], env, a());
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(await readdir(join(home(), '.kilde'))).toContain('lancedb');
    const search = await runCli(['search', 'ferry Samsø', '-c', 'Møde noter', '--json'], env, b());
    expect(search.code, search.stderr).toBe(0);
    expect(JSON.parse(search.stdout).documents[0][0]).toContain('Samsø');
  });

  it('gives a file the same id and source whichever folder the command ran in', {
    timeout: 120_000,
  }, async () => {
    const fromA = await runCli(['ingest', 'notes/ferry.md', '-c', 'ids'], env, a());
    const fromNotes = await runCli(['ingest', 'ferry.md', '-c', 'ids'], env, join(a(), 'notes'));
    const fromB = await runCli(['ingest', join(a(), 'notes', 'ferry.md'), '-c', 'ids'], env, b());
    const ids = [fromA, fromNotes, fromB].map((r) => jsonLines(r.stdout)[0]);
    // No repository above the temp dir and no --root: the path is the absolute one.
    const path = join(a(), 'notes', 'ferry.md').slice(1);
    for (const line of ids) expect(line).toMatchObject({ file: path, ok: true });
    expect(new Set(ids.map((l) => l?.file_id)).size).toBe(1);
    const list = await runCli(['documents', 'list', '-c', 'ids', '--json'], env, b());
    expect(JSON.parse(list.stdout)).toMatchObject([{ source: path }]);
  });

  it('keeps same-named files of two folders apart, and --root names them from a folder', {
    timeout: 120_000,
  }, async () => {
    for (const d of ['a', 'b']) {
      await mkdir(join(tmp.dir, 'two', d, 'notes'), { recursive: true });
      await writeFile(join(tmp.dir, 'two', d, 'notes', 'readme.md'), `# ${d}\n\nNotes of folder ${d}.\n`);
    }
    const two = join(tmp.dir, 'two');
    for (const d of ['a', 'b']) {
      const r = await runCli(['ingest', `${d}/notes`, '-c', 'two', '--root', '.'], env, two);
      expect(r.code, r.stderr).toBe(0);
      expect(jsonLines(r.stdout)[0]).toMatchObject({ file: `${d}/notes/readme.md`, ok: true });
    }
    const list = await runCli(['documents', 'list', '-c', 'two', '--json'], env, b());
    const sources = (JSON.parse(list.stdout) as { source: string }[]).map((d) => d.source).sort();
    expect(sources).toEqual(['a/notes/readme.md', 'b/notes/readme.md']);
    // A file outside --root is a usage error, nothing ingested.
    const outside = await runCli(['ingest', join(a(), 'notes'), '-c', 'two', '--root', two], env, b());
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain('outside --root');
  });

  it('says when a collection does not exist, with a non-zero exit', async () => {
    const run = await runCli(['search', 'ferry', '-c', 'nope'], env, b());
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^kilde: collection "nope" does not exist in .*\.kilde.*lancedb: nothing was ingested into it/,
    );
    const list = await runCli(['documents', 'list', '-c', 'nope'], env, b());
    expect(list.code).toBe(1);
  });

  it('refuses a collection name outside the rule before doing anything', async () => {
    const run = await runCli(['ingest', 'notes', '-c', 'a/b'], env, a());
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/collection name "a\/b" is not valid: use 1 to 128 characters/);
  });

  it('prints the cause of an embedding failure, not only its code', async () => {
    // A port nothing listens on.
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    server.close();
    const run = await runCli(
      ['ingest', 'notes', '-c', 'dense'],
      {
        ...env,
        KILDE_DATA_DIR: join(tmp.dir, 'dense-index'),
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_MODEL: 'e5',
        EMBEDDING_DIM: '8',
        EMBEDDING_API_BASE_URL: `http://127.0.0.1:${port}/v1`,
        EMBEDDING_MAX_RETRIES: '0',
      },
      a(),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `notes/ferry\\.md: .*unreachable.*127\\.0\\.0\\.1:${port}.*ECONNREFUSED.* \\(EMBEDDING_FAILED\\)`,
      ),
    );
  });

  it('hints http:// for a --url without a scheme', async () => {
    const run = await runCli(['search', 'x', '-c', 'kb', '--url', 'localhost:8000'], env, b());
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      'kilde: --url "localhost:8000" has no http:// or https:// scheme: use --url http://localhost:8000',
    );
  });

  it('fails a file over MAX_UPLOAD_BYTES cleanly instead of running out of memory', async () => {
    // 200 MB, sparse on disk: never read.
    const big = join(b(), 'huge.txt');
    const fh = await open(big, 'w');
    await fh.truncate(200 * 1024 * 1024);
    await fh.close();
    const run = await runCli(['ingest', big, '-c', 'big'], env, b());
    expect(run.code).toBe(1);
    expect(jsonLines(run.stdout)[0]).toMatchObject({ ok: false, code: 'INVALID_REQUEST' });
    expect(run.stderr).toMatch(
      /huge\.txt: File is 209715200 bytes, over MAX_UPLOAD_BYTES \(104857600 bytes\)/,
    );
  });
});
