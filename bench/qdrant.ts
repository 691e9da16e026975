import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { Registry } from 'prom-client';
import { LexicalAnalyzer } from '../src/embed/bm25/analysis.js';
import { Bm25Encoder } from '../src/embed/bm25/encoder.js';
import type { DenseEmbedder } from '../src/embed/dense.js';
import { type IndexPoint, pointId } from '../src/index/contract.js';
import { createQdrantIndex } from '../src/index/qdrant.js';
import { createCollectionState } from '../src/retrieve/collection-state.js';
import { createCorpusCache } from '../src/retrieve/corpus-cache.js';
import { createRetrieveMetrics } from '../src/retrieve/metrics.js';
import { createQueryLexical } from '../src/retrieve/query-lexical.js';
import { createSearchService, type SearchService } from '../src/retrieve/search-service.js';
import { startQdrantNodes } from '../test/live/qdrant-nodes.js';
import { mulberry32, percentile } from './lib/stats.js';

/**
 * `npm run bench:qdrant`: Kilde over a real Qdrant (QDRANT_URL, or QDRANT_BIN to start one node).
 *
 * 1. Search: p50/p99 and queries/s of dense and hybrid search through the retrieval service layer
 *    (`createSearchService` over the Qdrant adapter: query embedding from a prepared table, search,
 *    fusion, dedup) at concurrency 1 and 8, next to the very request the adapter sent (captured on
 *    the wire) replayed straight to Qdrant with `fetch` (the floor), and their ratio, at each size.
 * 2. Ingest: `kilde ingest` of the same folder into Qdrant and into the embedded LanceDB index
 *    (zero-cost `none` embedder: BM25 only, so both write the same sparse/full-text data).
 * Prints figures only; asserts nothing.
 *   --sizes 10000,100000 --queries 200 --k 5 --tenants 10 --dim 384 --files <folder> --copies 20
 */
const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    queries: { type: 'string', default: '200' },
    k: { type: 'string', default: '5' },
    tenants: { type: 'string', default: '10' },
    dim: { type: 'string', default: '384' },
    files: { type: 'string', default: 'docs' },
    copies: { type: 'string', default: '20' },
    'skip-ingest': { type: 'boolean', default: false },
  },
});
const SIZES = args.sizes.split(',').map(Number);
const QUERIES = Number(args.queries);
const K = Number(args.k);
const TENANTS = Number(args.tenants);
const DIM = Number(args.dim);
const rand = mulberry32(11);
const log = pino({ level: 'silent' });

const WORDS =
  'pump valve inlet fault restart bread rye sourdough tax income municipal state bicycle lane copenhagen harbour ferry winter timetable school teacher pupil exam election parliament minister river bridge tower castle king queen museum painting'.split(
    ' ',
  );
const sentence = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
function unit(): number[] {
  const v = Array.from({ length: DIM }, () => rand() * 2 - 1);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

class TableEmbedder implements DenseEmbedder {
  readonly provider = 'bench';
  readonly model = 'table';
  readonly dim = DIM;
  constructor(private readonly vectors: ReadonlyMap<string, number[]>) {}
  async embedDocuments(texts: readonly string[]) {
    return texts.map((t) => this.vectors.get(t)!);
  }
  async embedQuery(text: string) {
    return this.vectors.get(text)!;
  }
}

const url = process.env.QDRANT_URL?.replace(/\/+$/, '');
const bin = process.env.QDRANT_BIN;
if (!url && !bin) {
  console.log(
    'bench:qdrant needs QDRANT_URL (a running Qdrant) or QDRANT_BIN (a binary to start); docs/qdrant.md',
  );
  process.exit(2);
}
const nodes = url ? undefined : await startQdrantNodes(bin!, 1);
const qdrant = url ?? nodes!.urls[0]!;
const version = ((await (await fetch(`${qdrant}/`)).json()) as { version: string }).version;
console.log(
  `bench:qdrant — Qdrant ${version} at ${qdrant}; load ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
const bm25 = new Bm25Encoder({ language: 'english' });
const analyzer = new LexicalAnalyzer('english');

/** Every request the adapter sends, so the floor replays exactly those. */
const sent: { url: string; body: string }[] = [];
const capturing: typeof fetch = async (input, init) => {
  if (typeof init?.body === 'string' && String(input).includes('/points/query')) {
    sent.push({ url: String(input), body: init.body });
  }
  return fetch(input, init);
};

async function load(collection: string, size: number) {
  const index = createQdrantIndex(
    { uri: qdrant, collection, denseDim: DIM, sparse: true, timeoutMs: 600_000 },
    { log, upsertBatchSize: 256 },
  );
  await index.ensureCollection();
  const batch: IndexPoint[] = [];
  for (let i = 0; i < size; i++) {
    const content = `${sentence(20)} item${i}`;
    batch.push({
      id: pointId(`f${i}`, 'v1', 0),
      content,
      meta: {
        collection_name: `t${i % TENANTS}`,
        collection_type: 'knowledge',
        file_id: `f${i}`,
        ingest_version: 'v1',
        split_id: 0,
      },
      dense: unit(),
      sparse: bm25.encodeDocument(content),
    });
    if (batch.length === 1024 || i === size - 1) await index.upsert(batch.splice(0));
  }
  // Wait for the optimizer: searching a collection still being indexed measures the indexing.
  for (;;) {
    const info = (await (await fetch(`${qdrant}/collections/${collection}`)).json()) as {
      result: { status: string };
    };
    if (info.result.status === 'green') break;
    await new Promise((r) => setTimeout(r, 500));
  }
}

function service(collection: string, hybrid: boolean, vectors: Map<string, number[]>): SearchService {
  const index = createQdrantIndex(
    { uri: qdrant, collection, denseDim: DIM, sparse: true, timeoutMs: 60_000 },
    { log, fetch: capturing },
  );
  const state = createCollectionState({ index, refreshMs: 10_000, partialRefreshMs: 1000 });
  return createSearchService({
    pipeline: {
      index,
      dense: new TableEmbedder(vectors),
      lexical: createQueryLexical({ index, analyzer, collection: state, refreshMs: 10_000 }),
      hybrid,
      multiplier: 3,
      corpus: createCorpusCache({ index, analyzer, maxDocs: 20_000, ttlMs: 60_000 }),
      metrics: createRetrieveMetrics(new Registry()),
      log,
    },
    collection: state,
    generateQueries: false,
    lastMessages: 6,
    maxQueries: 3,
    mergeResults: false,
    log,
  });
}

async function timed(n: number, concurrency: number, run: (i: number) => Promise<unknown>) {
  const times: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) {
        const t = performance.now();
        await run(i);
        times.push(performance.now() - t);
      }
    }),
  );
  const wall = performance.now() - start;
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), qps: (n / wall) * 1000 };
}

const fmt = (x: number) => x.toFixed(2).padStart(7);
console.log('\nsearch (ms; ratio = Kilde / Qdrant alone, same request)');
console.log('size     mode    c   Kilde p50  p99      Qdrant p50  p99      ratio p50  p99    Kilde q/s');
for (const size of SIZES) {
  const collection = `bench_qdrant_${size}_${Date.now().toString(36)}`;
  const t0 = performance.now();
  await load(collection, size);
  console.log(`(${size} chunks loaded and indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  const queries = Array.from({ length: QUERIES }, (_, i) => ({
    text: `${sentence(4)} q${i}`,
    tenant: `t${i % TENANTS}`,
  }));
  const vectors = new Map(queries.map((q) => [q.text, unit()]));
  for (const mode of ['dense', 'hybrid'] as const) {
    const svc = service(collection, mode === 'hybrid', vectors);
    const search = (i: number) => {
      const q = queries[i % queries.length]!;
      return svc.search({ queries: [q.text], collection_names: [q.tenant], k: K });
    };
    for (let i = 0; i < 20; i++) await search(i); // warm-up
    sent.length = 0;
    for (let i = 0; i < queries.length; i++) await search(i);
    const replay = sent.splice(0);
    const floor = (i: number) => {
      const r = replay[i % replay.length]!;
      // Plain answers, as Kilde asks for them: a gzipped one stalls on the delayed ACK (docs/qdrant.md).
      return fetch(r.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'accept-encoding': 'identity' },
        body: r.body,
      }).then((x) => x.arrayBuffer());
    };
    for (const c of [1, 8]) {
      const n = Math.max(QUERIES, c * 50);
      const kilde = await timed(n, c, search);
      const alone = await timed(n, c, floor);
      console.log(
        `${String(size).padEnd(8)} ${mode.padEnd(7)} ${String(c).padEnd(3)} ${fmt(kilde.p50)} ${fmt(kilde.p99)}   ${fmt(alone.p50)} ${fmt(alone.p99)}   ${fmt(kilde.p50 / alone.p50)} ${fmt(kilde.p99 / alone.p99)}   ${kilde.qps.toFixed(0).padStart(6)}`,
      );
    }
  }
  await fetch(`${qdrant}/collections/${collection}`, { method: 'DELETE' });
}

if (!args['skip-ingest']) {
  // The same files into both engines: `--copies` copies of the folder, as separate documents.
  const src = mkdtempSync(join(tmpdir(), 'kilde-bench-files-'));
  for (let i = 0; i < Number(args.copies); i++)
    cpSync(args.files, join(src, `copy-${i}`), { recursive: true });
  const files = readdirSync(src, { recursive: true }).length;
  console.log(
    `\ningest: kilde ingest of ${files} entries (${args.copies} copies of ${args.files}), EMBEDDING_PROVIDER=none`,
  );
  for (const engine of ['lancedb', 'qdrant'] as const) {
    const data = mkdtempSync(join(tmpdir(), 'kilde-bench-data-'));
    const env = {
      ...process.env,
      KILDE_DATA_DIR: data,
      EMBEDDING_PROVIDER: 'none',
      ...(engine === 'qdrant'
        ? {
            VECTORDB_URI: qdrant,
            VECTORDB_INDEX: `bench_ingest_${Date.now().toString(36)}`,
            ENABLE_SPARSE_EMBEDDINGS: 'true',
          }
        : {}),
    };
    const t = performance.now();
    const run = spawnSync('bin/kilde', ['ingest', src, '--collection', 'bench', '--root', src], {
      env,
      encoding: 'utf8',
    });
    const s = (performance.now() - t) / 1000;
    if (run.status !== 0) console.log(`${engine}: failed (${run.status}): ${run.stderr.slice(-500)}`);
    else console.log(`${engine.padEnd(8)} ${s.toFixed(1)} s   ${(files / s).toFixed(1)} entries/s`);
    // A fresh connection: Qdrant closes idle keep-alive sockets, and a reused one can fail.
    if (engine === 'qdrant') {
      await fetch(`${qdrant}/collections/${env.VECTORDB_INDEX}`, {
        method: 'DELETE',
        headers: { connection: 'close' },
      }).catch(() => undefined);
    }
    rmSync(data, { recursive: true, force: true });
  }
  rmSync(src, { recursive: true, force: true });
}
await nodes?.close();
