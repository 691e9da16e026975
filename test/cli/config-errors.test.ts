import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/**
 * Configuration mistakes stop `kilde serve` with exit 2 and one line naming the variable, before
 * anything is created — never a LanceDB folder named after a Qdrant address, never exit 1 from
 * inside a builder.
 */
describe('configuration errors', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  beforeAll(async () => {
    tmp = await tempDir('kilde-config-');
  });
  afterAll(() => tmp?.remove());

  const serve = (service: string, extra: Record<string, string>) =>
    runCli(
      ['serve', service],
      cleanEnv({ API_KEY: 'k', PORT: '0', KILDE_DATA_DIR: `${tmp.dir}/.kilde`, ...extra }),
      tmp.dir,
    );

  it.each([
    [
      'qdrant:6333',
      /^kilde: Configuration error: VECTORDB_URI "qdrant:6333" looks like host:port: write http:\/\/qdrant:6333/,
    ],
    ['localhost:6333/', /VECTORDB_URI .*write http:\/\/localhost:6333\//],
    ['grpc://qdrant:6334', /VECTORDB_URI has the unsupported scheme "grpc:\/\/": use http:\/\/host:6333/],
  ])('VECTORDB_URI=%s is refused with an http:// hint, creating nothing', async (uri, message) => {
    for (const service of ['retrieve', 'ingest', 'all']) {
      const run = await serve(service, { EMBEDDING_PROVIDER: 'none', VECTORDB_URI: uri });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
    expect(await readdir(tmp.dir)).toEqual([]);
  });

  it.each(['retrieve', 'ingest', 'all'])(
    'EMBEDDING_PROVIDER=http-compat without EMBEDDING_DIM (%s): exit 2, one line naming it',
    async (service) => {
      const run = await serve(service, {
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_MODEL: 'e5',
        EMBEDDING_API_BASE_URL: 'http://127.0.0.1:9/v1',
      });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toEqual([
        "kilde: Configuration error: EMBEDDING_DIM is required with EMBEDDING_PROVIDER=http-compat (the model's vector size)",
      ]);
    },
  );

  it('names every missing companion of a dense provider at once', async () => {
    const run = await serve('retrieve', { EMBEDDING_PROVIDER: 'inference-server' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /EMBEDDING_DIM is required.*; EMBEDDING_API_BASE_URL is required with EMBEDDING_PROVIDER=inference-server/,
    );
  });

  it('a path and http(s)/file URIs are accepted', async () => {
    const run = await runCli(
      ['search', 'x', '-c', 'kb'],
      cleanEnv({ VECTORDB_URI: `${tmp.dir}/lance:index`, KILDE_DATA_DIR: `${tmp.dir}/.kilde` }),
      tmp.dir,
    );
    expect(run.stderr).not.toMatch(/Configuration error/);
  });
});
