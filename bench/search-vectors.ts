import { createReadStream, createWriteStream, existsSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, truncate } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { z } from 'zod';
import { embeddingPiece } from '../src/config/index-settings.js';
import { parseConfig } from '../src/config/parse.js';
import { createDenseEmbedder } from '../src/embed/create-dense.js';
import { benchData } from './lib/data.js';

/**
 * `npx tsx bench/search-vectors.ts --model DIR --chunks 100000 --out .tmp/ann/scifact`: real
 * embeddings for `bench:search --vectors` (ANN recall with a real model rather than clustered
 * random vectors). The texts are SciFact's abstracts cut into passages: every sentence, then every
 * run of two and of three sentences, then titles, until `--chunks` texts; the queries are SciFact's
 * train questions. Each is embedded by Kilde's in-process provider over the ONNX model in DIR
 * (`.tmp/models/all-MiniLM-L6-v2` after `npm run test:models-live`). Writes `OUT.docs.f32` and
 * `OUT.queries.f32` (little-endian float32 rows of `--dim` values) and prints the counts; a file
 * already there is kept, and a run stopped midway resumes where it stopped (`OUT.*.f32.part`). On
 * a shared 2-core machine this is slow (≈ 2–4 passages/s at load 20; docs/quality.md): run it
 * where there are cores to spare.
 */
const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    chunks: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    out: { type: 'string', default: '.tmp/ann/scifact' },
    batch: { type: 'string', default: '64' },
  },
});
if (!args.model) {
  console.error('--model DIR is required (an ONNX model folder the in-process provider loads)');
  process.exit(2);
}
const CHUNKS = Number(args.chunks);
const DIM = Number(args.dim);

const embedder = createDenseEmbedder(
  parseConfig(z.object(embeddingPiece), {
    EMBEDDING_PROVIDER: 'inprocess',
    EMBEDDING_MODEL: args.model,
    EMBEDDING_OFFLINE: 'true',
    EMBEDDING_DIM: String(DIM),
    EMBEDDING_PREFIX_DOC: '',
    EMBEDDING_PREFIX_QUERY: '',
    EMBEDDING_MAX_TOKENS: '256',
  }),
  { log: pino({ level: 'warn' }) },
);
if (!embedder) throw new Error('no embedder');

async function passages(): Promise<string[]> {
  const docs: { title: string; sentences: string[] }[] = [];
  const lines = createInterface({ input: createReadStream(benchData('scifact', 'corpus.jsonl')) });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const d = JSON.parse(line) as { title: string; text: string };
    docs.push({
      title: d.title,
      sentences: d.text.split(/(?<=[.!?])\s+(?=[A-Z(])/).filter((s) => s.length > 20),
    });
  }
  const out: string[] = [];
  for (const width of [1, 2, 3]) {
    for (const d of docs) {
      for (let i = 0; i + width <= d.sentences.length; i++)
        out.push(d.sentences.slice(i, i + width).join(' '));
    }
  }
  out.push(...docs.map((d) => d.title));
  if (out.length < CHUNKS)
    throw new Error(`SciFact gives ${out.length} passages, fewer than --chunks ${CHUNKS}`);
  return out.slice(0, CHUNKS);
}

async function embedTo(path: string, texts: readonly string[], label: string, query: boolean): Promise<void> {
  if (existsSync(path)) {
    console.log(`${path}: kept`);
    return;
  }
  // Resumable: rows already in the `.part` file (a run stopped midway) are kept, and the run goes on after them.
  const row = DIM * 4;
  const have = existsSync(`${path}.part`) ? Math.floor(statSync(`${path}.part`).size / row) : 0;
  if (have > 0) {
    await truncate(`${path}.part`, have * row);
    console.log(`${path}.part: resuming after ${have} vectors`);
  }
  const out = createWriteStream(`${path}.part`, { flags: 'a' });
  const batch = Number(args.batch);
  const t0 = performance.now();
  for (let i = have; i < texts.length; i += batch) {
    const slice = texts.slice(i, i + batch);
    const vectors = query
      ? await Promise.all(slice.map((t) => embedder!.embedQuery(t)))
      : await embedder!.embedDocuments(slice);
    const buf = Buffer.alloc(vectors.length * DIM * 4);
    vectors.forEach((v, r) => {
      v.forEach((x, c) => {
        buf.writeFloatLE(x, (r * DIM + c) * 4);
      });
    });
    if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
    if (((i - have) / batch) % 20 === 0) {
      const s = (performance.now() - t0) / 1000;
      process.stderr.write(`${label}: ${i + slice.length} of ${texts.length} (${s.toFixed(0)} s)\n`);
    }
  }
  await new Promise<void>((r) => out.end(r));
  await rename(`${path}.part`, path);
  console.log(`${path}: ${texts.length} vectors in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

await mkdir(args.out.replace(/\/[^/]*$/, ''), { recursive: true });
const queries = (await readFile(benchData('scifact', 'queries-train.jsonl'), 'utf8'))
  .trim()
  .split('\n')
  .map((l) => (JSON.parse(l) as { text: string }).text);
await embedTo(`${args.out}.queries.f32`, queries, 'queries', true);
await embedTo(`${args.out}.docs.f32`, await passages(), 'passages', false);
await embedder.close?.();
