import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/**
 * Every `kilde` command pays for the modules it loads, at each start. The local `ingest` drives the
 * pipeline without an HTTP app, so the HTTP kernel, the object store's SDK, Redis and the metrics
 * must not load for it (≈ 0.4 s of CPU and 20 MiB at each run, docs/performance.md); the commands
 * that answer through the in-process app (`search`) still load fastify.
 */
describe('the packages a local command loads', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const hook = new URL('../helpers/record-packages.mjs', import.meta.url).href;
  const SERVER_ONLY = [
    'fastify',
    '@fastify/multipart',
    '@aws-sdk/client-s3',
    'ioredis',
    'bullmq',
    'prom-client',
  ];

  beforeAll(async () => {
    tmp = await tempDir('kilde-lean-');
    await mkdir(join(tmp.dir, 'notes'));
    await writeFile(join(tmp.dir, 'notes', 'ferry.md'), '# Ferries\n\nThe ferry to Samsø leaves at nine.\n');
  });
  afterAll(() => tmp?.remove());

  const lines = async (file: string) => new Set((await readFile(file, 'utf8')).split('\n').filter(Boolean));
  const run = async (args: string[], name: string) => {
    const file = join(tmp.dir, `${name}.txt`);
    const modules = join(tmp.dir, `${name}-modules.txt`);
    await writeFile(file, '');
    await writeFile(modules, '');
    const env = cleanEnv({
      KILDE_DATA_DIR: join(tmp.dir, 'data'),
      NODE_OPTIONS: `--import ${hook}`,
      KILDE_TEST_PACKAGES_FILE: file,
      KILDE_TEST_MODULES_FILE: modules,
    });
    const done = await runCli(args, env, tmp.dir);
    expect(done.code, done.stderr).toBe(0);
    return { packages: await lines(file), modules: await lines(modules) };
  };
  const loaded = async (args: string[], name: string) => (await run(args, name)).packages;

  it('ingest: the pipeline and the index, no HTTP kernel, object store, Redis or metrics', async () => {
    const { packages, modules } = await run(['ingest', 'notes', '-c', 'lean'], 'ingest');
    expect(packages).toContain('@lancedb/lancedb');
    for (const name of SERVER_ONLY) expect(packages, name).not.toContain(name);
    // Nor the client of a server (`--url`): its backend, the jobs client, the job batches.
    expect(modules).toContain('cli/walk.js');
    const clientOnly = [
      'cli/http-backend.js',
      'cli/job-client.js',
      'cli/job-ingest.js',
      'cli/job-batches.js',
    ];
    expect(clientOnly.filter((m) => modules.has(m))).toEqual([]);
  });

  it('search: answered by the in-process app, so fastify loads', async () => {
    const packages = await loaded(['search', 'ferry', '-c', 'lean', '--json'], 'search');
    expect(packages).toContain('fastify');
    expect(packages).not.toContain('@aws-sdk/client-s3');
  });
});
