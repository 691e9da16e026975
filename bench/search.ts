import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect, type Table } from '@lancedb/lancedb';
import pino from 'pino';
import { Registry } from 'prom-client';
import { LexicalAnalyzer } from '../src/embed/bm25/analysis.js';
import type { DenseEmbedder } from '../src/embed/dense.js';
import { type IndexPoint, pointId } from '../src/index/contract.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import { DEFAULT_CACHE_MB } from '../src/index/lancedb-cache.js';
import { DENSE_COLUMN, LEXICAL_COLUMN } from '../src/index/lancedb-rows.js';
import {
  buildVectorIndexIfDue,
  DEFAULT_VECTOR_INDEX,
  denseIndexBytes,
  isDenseIndex,
  isQuantizedIndex,
  tuneVectorQuery,
  type VectorIndexSettings,
} from '../src/index/lancedb-vector-index.js';
import { RRF_K } from '../src/index/rrf.js';
import { createCollectionState } from '../src/retrieve/collection-state.js';
import { createCorpusCache } from '../src/retrieve/corpus-cache.js';
import { createRetrieveMetrics } from '../src/retrieve/metrics.js';
import { createQueryLexical } from '../src/retrieve/query-lexical.js';
import { createSearchService, type SearchService } from '../src/retrieve/search-service.js';
import { mulberry32, percentile } from './lib/stats.js';
import { gridOf, parseRefines, printGrid, vectorGrid } from './lib/vector-grid.js';

/**
 * `npm run bench:search`: latency (p50/p99) and queries/s of dense, hybrid and lexical search through
 * the retrieval service layer (`createSearchService`: query embedding, search, fusion, dedup) at
 * concurrency 1 and 8, next to the same query sent straight to LanceDB (the floor), and their ratio;
 * then dense recall@10 of the adapter's search against exact search (`bypassVectorIndex`) and the
 * exact search's latency. Past `LANCEDB_VECTOR_INDEX_MIN_ROWS` (default 50k) the index builds its
 * dense vector index as `kilde ingest` would. With `--chunks` above 100k the table is measured at
 * 100k first, then grown to `--chunks` and measured again. Prints figures only; asserts nothing.
 *   --chunks 100000 --queries 200 --k 5 --tenants 10 --dim 384 --modes dense,hybrid,lexical
 *   --min-rows 5000 --ann-min-rows 200000 --ef 100 --refine 0 --dir <keep the index here>
 * `--grid 100,200,400,800 [--refines none,2,5,10]` adds, at each size, recall@10 and p50/p99 of the
 * raw dense query over every ef × refine factor (bench/lib/vector-grid.ts); `--grid-only` skips the
 * service measurements.
 * `--vectors PREFIX` takes real embeddings instead of the clustered random vectors: the chunks' from
 * `PREFIX.docs.f32`, the queries' from `PREFIX.queries.f32` (float32 rows of `--dim`; written by
 * `bench/search-vectors.ts` with a real model over SciFact, or by `bench/ann-embed.py` over the
 * real passages of `bench/ann-corpus.py`; a `.part` file still being written is read as far as it
 * goes), so recall is measured on a real embedding space. `--recall-queries 200` measures recall over
 * that many queries (default 100); `--steps 100000,400000` chooses the sizes measured; `--grow-only`
 * grows the table in `--dir` to `--chunks` and stops (a later run measures it).
 */
const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    k: { type: 'string', default: '5' },
    tenants: { type: 'string', default: '10' },
    dim: { type: 'string', default: '384' },
    modes: { type: 'string', default: 'dense,hybrid,lexical' },
    'min-rows': { type: 'string', default: String(DEFAULT_VECTOR_INDEX.minRows) },
    'ann-min-rows': { type: 'string', default: String(DEFAULT_VECTOR_INDEX.annMinRows) },
    ef: { type: 'string', default: String(DEFAULT_VECTOR_INDEX.ef) },
    refine: { type: 'string', default: String(DEFAULT_VECTOR_INDEX.refine) },
    grid: { type: 'string' },
    refines: { type: 'string', default: 'none,2,5,10' },
    'grid-only': { type: 'boolean', default: false },
    dir: { type: 'string' },
    vectors: { type: 'string' },
    'recall-queries': { type: 'string', default: '100' },
    steps: { type: 'string' },
    'grow-only': { type: 'boolean', default: false },
  },
});
const CHUNKS = Number(args.chunks);
const QUERIES = Number(args.queries);
/** Queries whose recall is measured (the first of the `--queries`; more than those repeat them). */
const RECALL_QUERIES = Math.min(Number(args['recall-queries']), QUERIES);
const K = Number(args.k);
const TENANTS = Number(args.tenants);
const DIM = Number(args.dim);
const COLLECTION = 'bench';
const VECTOR_INDEX: VectorIndexSettings = {
  minRows: Number(args['min-rows']),
  annMinRows: Number(args['ann-min-rows']),
  ef: Number(args.ef),
  refine: Number(args.refine),
};
/** The sizes measured: 100k first when more is asked for, so one run shows how latency grows (`--steps` to choose). */
const STEPS = args.steps
  ? args.steps.split(',').map(Number)
  : CHUNKS > 100_000
    ? [100_000, CHUNKS]
    : [CHUNKS];

const rand = mulberry32(7);

/** Real embeddings (`--vectors`): float32 rows, read once; a `.part` file still being written is read as far as it goes. */
function readRows(path: string): Float32Array {
  const bytes = readFileSync(existsSync(path) ? path : `${path}.part`);
  return new Float32Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.byteLength / 4 / DIM) * DIM);
}
const REAL = args.vectors
  ? { docs: readRows(`${args.vectors}.docs.f32`), queries: readRows(`${args.vectors}.queries.f32`) }
  : undefined;
if (REAL && REAL.docs.length / DIM < CHUNKS) {
  throw new Error(
    `${args.vectors}.docs.f32 holds ${REAL.docs.length / DIM} vectors of dim ${DIM}, fewer than --chunks ${CHUNKS}`,
  );
}
const realRow = (rows: Float32Array, n: number) => Array.from(rows.subarray(n * DIM, (n + 1) * DIM));
/** What the dense vectors are, for the printed titles. */
const VECTORS = REAL ? `real embeddings from ${args.vectors}` : 'clustered vectors';

// Pseudo-words drawn with a Zipf-like skew: a few very common words (low IDF) and a long tail of
// rare ones (high IDF), so BM25 has real term statistics to work with.
const CONSONANTS = 'bdfgklmnprstvz';
const VOWELS = 'aeiou';
const VOCAB = Array.from({ length: 6000 }, (_, i) => {
  let w = '';
  for (let n = i + 7, len = 0; len < 2 || n > 0; len++, n = Math.floor(n / 70)) {
    w += CONSONANTS[n % CONSONANTS.length]! + VOWELS[Math.floor(n / CONSONANTS.length) % VOWELS.length]!;
  }
  return w;
});
const zipfWord = () => VOCAB[Math.floor(VOCAB.length * rand() ** 2.5)]!;
/** Query words come from the middle of the distribution: present in many chunks, not in all. */
const queryWord = () => VOCAB[50 + Math.floor(rand() * 1500)]!;

// Vectors cluster around topic centres, as embeddings of real chunks do (uniform random vectors in
// 384 dimensions have no near neighbours to find, which no embedding model produces).
const CENTRES = Array.from({ length: 512 }, () => Array.from({ length: DIM }, () => rand() * 2 - 1));
function clustered(spread: number): number[] {
  const c = CENTRES[Math.floor(rand() * CENTRES.length)]!;
  const v = c.map((x) => x + (rand() * 2 - 1) * spread);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}

const analyzer = new LexicalAnalyzer('english');
const denseOnly = !args.modes.split(',').some((m) => m !== 'dense');

function chunk(n: number): IndexPoint {
  const fileId = `file-${Math.floor(n / 20)}`;
  const splitId = n % 20;
  // Dense-only runs (the 1M scale run) keep the text short: its full-text index is not measured.
  const words = denseOnly ? 8 : 40 + Math.floor(rand() * 60);
  const content = Array.from({ length: words }, zipfWord).join(' ');
  return {
    id: pointId(fileId, 'v1', splitId),
    content,
    lexical: analyzer.document(content, 'english').terms.join(' '),
    meta: {
      collection_name: `tenant-${Math.floor(n / 20) % TENANTS}`,
      collection_type: 'knowledge',
      file_id: fileId,
      ingest_version: 'v1',
      split_id: splitId,
      name: `${fileId}.md`,
    },
    dense: REAL ? realRow(REAL.docs, n) : clustered(0.6),
  };
}

/** A zero-cost embedder in process: the bench measures Kilde, not a model or a network. */
class InProcessEmbedder implements DenseEmbedder {
  readonly provider = 'bench';
  readonly model = 'clustered';
  readonly dim = DIM;
  constructor(private readonly vectors: ReadonlyMap<string, number[]>) {}
  async embedDocuments(texts: readonly string[]) {
    return texts.map((t) => this.embed(t));
  }
  async embedQuery(text: string) {
    return this.embed(text);
  }
  private embed(text: string): number[] {
    const v = this.vectors.get(text);
    if (!v) throw new Error(`no vector prepared for "${text}"`);
    return v;
  }
}

interface Query {
  text: string;
  /** The query's analysed terms, as the service sends them to the full-text index. */
  terms: string;
  vector: number[];
  tenant: string;
}

const MODES = ['dense', 'hybrid', 'lexical'] as const;
type Mode = (typeof MODES)[number];

/**
 * The index cache sized as docs/operations.md tells an operator to ("LanceDB's caches"): room for the
 * largest dense index the run builds (the exact one up to `annMinRows`, the approximate one past it)
 * and half as much again for the full-text index, at least Kilde's default.
 */
const INDEX_CACHE_MB = Math.max(
  DEFAULT_CACHE_MB.index,
  Math.ceil(
    (1.5 *
      Math.max(
        denseIndexBytes('exact', Math.min(CHUNKS, VECTOR_INDEX.annMinRows), DIM),
        CHUNKS >= VECTOR_INDEX.annMinRows ? denseIndexBytes('ann', CHUNKS, DIM) : 0,
      )) /
      2 ** 20,
  ),
);

function indexSettings(dir: string) {
  return {
    uri: dir,
    collection: COLLECTION,
    denseDim: DIM,
    sparse: true,
    timeoutMs: 600_000,
    vectorIndex: VECTOR_INDEX,
    cacheMb: { index: INDEX_CACHE_MB, metadata: DEFAULT_CACHE_MB.metadata },
  };
}

/** The service-layer search for one mode, over its own index handle (as `kilde serve retrieve` has). */
async function serviceFor(mode: Mode, dir: string, vectors: Map<string, number[]>): Promise<SearchService> {
  const log = pino({ level: 'silent' });
  const index = await createLanceIndex(indexSettings(dir), { log });
  const collection = createCollectionState({ index, refreshMs: 10_000, partialRefreshMs: 1000 });
  return createSearchService({
    pipeline: {
      index,
      dense: mode === 'lexical' ? undefined : new InProcessEmbedder(vectors),
      lexical: createQueryLexical({ index, analyzer, collection, refreshMs: 10_000 }),
      hybrid: mode === 'hybrid',
      multiplier: 3,
      corpus: createCorpusCache({ index, analyzer, maxDocs: 20_000, ttlMs: 60_000 }),
      metrics: createRetrieveMetrics(new Registry()),
      log,
    },
    collection,
    generateQueries: false,
    lastMessages: 6,
    maxQueries: 3,
    mergeResults: false,
    log,
  });
}

/** The same query straight against LanceDB: what the adapter sends, with nothing around it. */
function floorFor(mode: Mode, table: Table, quantized: boolean): (q: Query) => Promise<unknown> {
  // The pipeline over-fetches 2 × k for dedup; the hybrid adapter takes 20 per side before fusion.
  const fetchN = K * 2;
  const sideN = Math.max(fetchN * 2, 20);
  const tenantSql = (q: Query) => `collection_name IN ('${q.tenant}')`;
  const dense = (q: Query, n: number) =>
    tuneVectorQuery(table.vectorSearch(q.vector), VECTOR_INDEX, n, quantized)
      .column(DENSE_COLUMN)
      .distanceType('cosine')
      .where(tenantSql(q))
      .select(['id', 'content', 'meta', '_distance'])
      .limit(n)
      .toArray();
  const lexical = (q: Query, n: number) =>
    table
      .query()
      .fullTextSearch(q.terms, { columns: LEXICAL_COLUMN })
      .where(tenantSql(q))
      .select(['id', 'content', 'meta', '_score'])
      .limit(n)
      .toArray();
  switch (mode) {
    case 'dense':
      return (q) => dense(q, fetchN);
    case 'lexical':
      return (q) => lexical(q, fetchN);
    case 'hybrid':
      return async (q) => {
        const lists: { id: string }[][] = await Promise.all([dense(q, sideN), lexical(q, sideN)]);
        const fused = new Map<string, number>();
        for (const list of lists) {
          list.forEach((row, i) => {
            fused.set(row.id, (fused.get(row.id) ?? 0) + 1 / (RRF_K + i + 1));
          });
        }
        return [...fused.entries()].sort((a, b) => b[1] - a[1]).slice(0, fetchN);
      };
  }
}

interface Figures {
  p50: number;
  p99: number;
  qps: number;
}

/** Runs every query once with `concurrency` workers pulling from one queue; returns each latency. */
async function latencies(queries: Query[], concurrency: number, run: (q: Query) => Promise<unknown>) {
  const out: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < queries.length) {
        const q = queries[next++]!;
        const start = performance.now();
        await run(q);
        out.push(performance.now() - start);
      }
    }),
  );
  return { out, wall: performance.now() - t0 };
}

const ROUNDS = 3;

/**
 * The floor and the service over every query, `ROUNDS` times: at concurrency 1 query by query
 * (floor then service, then the other way round), above it in alternating rounds (floor, service,
 * floor, …), so that load from other processes on a shared machine falls on both alike.
 */
async function measurePair(
  queries: Query[],
  concurrency: number,
  floor: (q: Query) => Promise<unknown>,
  service: (q: Query) => Promise<unknown>,
): Promise<[Figures, Figures]> {
  for (const q of queries.slice(0, 10)) await Promise.all([floor(q), service(q)]); // warm-up
  const acc = [
    { lat: [] as number[], wall: 0 },
    { lat: [] as number[], wall: 0 },
  ];
  if (concurrency === 1) {
    // One at a time: each query goes to both, in alternating order, so that even a burst of load
    // from elsewhere falls on both sides alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [n, q] of queries.entries()) {
        const order = (n + round) % 2 === 0 ? [0, 1] : [1, 0];
        for (const i of order) {
          const start = performance.now();
          await [floor, service][i]!(q);
          const ms = performance.now() - start;
          acc[i]!.lat.push(ms);
          acc[i]!.wall += ms;
        }
      }
    }
  } else {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, run] of [floor, service].entries()) {
        const r = await latencies(queries, concurrency, run);
        acc[i]!.lat.push(...r.out);
        acc[i]!.wall += r.wall;
      }
    }
  }
  const figures = ({ lat, wall }: { lat: number[]; wall: number }): Figures => {
    lat.sort((a, b) => a - b);
    return {
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      qps: ((queries.length * ROUNDS) / wall) * 1000,
    };
  };
  return [figures(acc[0]!), figures(acc[1]!)];
}

/** Grows the table to `upTo` chunks through the adapter, as ingestion writes them. */
async function grow(dir: string, from: number, upTo: number): Promise<void> {
  const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });
  const index = await createLanceIndex(indexSettings(dir), { log });
  await index.ensureCollection();
  const t0 = performance.now();
  const batch = 2000;
  for (let start = from; start < upTo; start += batch) {
    await index.upsert(Array.from({ length: Math.min(batch, upTo - start) }, (_, i) => chunk(start + i)));
  }
  const written = performance.now();
  await index.close(); // waits for queued background optimizes and a vector index build
  // One final optimize so the full-text and vector indexes cover every row, as a settled index would.
  const db = await connect(dir);
  const table = await db.openTable(COLLECTION);
  await table.optimize();
  // And the dense index the writer's next optimize would build or retrain, had more writes come.
  await buildVectorIndexIfDue(table, VECTOR_INDEX, { log, now: () => performance.now() });
  const indices = (await table.listIndices()).filter(isDenseIndex).map((i) => i.name);
  console.log(
    `grew to ${await table.countRows()} chunks (${TENANTS} tenants, dim ${DIM}): writes ${((written - t0) / 1000).toFixed(1)} s, ` +
      `then ${((performance.now() - written) / 1000).toFixed(1)} s for the background work to settle; dense index: ${indices.join(', ') || 'none'}`,
  );
  table.close();
  db.close();
}

/** Dense recall@10 of the adapter's search (index and settings as configured) against exact search. */
async function recall(dir: string, table: Table, queries: Query[]) {
  const index = await createLanceIndex(indexSettings(dir), { log: pino({ level: 'silent' }) });
  let found = 0;
  let wanted = 0;
  let worst = 1;
  const exactMs: number[] = [];
  for (const q of queries) {
    const t0 = performance.now();
    const exact: { id: string }[] = await table
      .vectorSearch(q.vector)
      .bypassVectorIndex()
      .column(DENSE_COLUMN)
      .distanceType('cosine')
      .where(`collection_name IN ('${q.tenant}')`)
      .select(['id'])
      .limit(10)
      .toArray();
    exactMs.push(performance.now() - t0);
    const approx = new Set(
      (await index.searchDense(q.vector, { collectionNames: [q.tenant] }, 10)).map((h) => h.id),
    );
    const hits = exact.filter((r) => approx.has(r.id)).length;
    wanted += exact.length;
    found += hits;
    if (exact.length > 0) worst = Math.min(worst, hits / exact.length);
  }
  await index.close();
  exactMs.sort((a, b) => a - b);
  return {
    recall: found / wanted,
    worst,
    exactP50: percentile(exactMs, 50),
    exactP99: percentile(exactMs, 99),
  };
}

async function measureAt(dir: string, rows: number, queries: Query[], vectors: Map<string, number[]>) {
  const db = await connect(dir);
  const table = await db.openTable(COLLECTION);
  const out: string[][] = [];
  const modes = args['grid-only']
    ? []
    : args.modes.split(',').filter((m): m is Mode => (MODES as readonly string[]).includes(m));
  for (const mode of modes) {
    const service = await serviceFor(mode, dir, vectors);
    const viaService = (q: Query) =>
      service.search({ queries: [q.text], collection_names: [q.tenant], k: K });
    const floor = floorFor(mode, table, (await table.listIndices()).some(isQuantizedIndex));
    // A sanity figure: a bench of searches that find nothing would measure nothing.
    const sample = await Promise.all(queries.slice(0, 20).map(viaService));
    const found = sample.reduce((n, r) => n + (r.documents[0]?.length ?? 0), 0);
    console.log(`${mode}: ${(found / sample.length).toFixed(1)} hits per query (k=${K}, first 20 queries)`);
    for (const concurrency of [1, 8]) {
      const [f, s] = await measurePair(queries, concurrency, floor, viaService);
      out.push([
        String(rows),
        mode,
        String(concurrency),
        s.p50.toFixed(2),
        s.p99.toFixed(2),
        s.qps.toFixed(0),
        f.p50.toFixed(2),
        f.p99.toFixed(2),
        f.qps.toFixed(0),
        (s.p50 / f.p50).toFixed(2),
      ]);
    }
  }
  printTable(
    [
      'chunks',
      'mode',
      'conc',
      'service p50 ms',
      'p99 ms',
      'q/s',
      'lancedb p50 ms',
      'p99 ms',
      'q/s',
      'p50 ratio',
    ],
    out,
  );
  // Recall at every size, beside the latencies: the index Kilde built at this size against exact search.
  if (modes.includes('dense') || args['grid-only']) {
    const indexKind =
      (await table.listIndices())
        .filter(isDenseIndex)
        .map((i) => `${i.name} ${i.indexType}`)
        .join(', ') || 'no dense index: exact scan';
    const r = await recall(dir, table, queries.slice(0, RECALL_QUERIES));
    console.log(
      `dense recall@10 vs exact search at ${rows} chunks (${VECTORS}; ${indexKind}): ${r.recall.toFixed(3)}, worst query ${r.worst.toFixed(1)} (${RECALL_QUERIES} queries; ef ${VECTOR_INDEX.ef}, refine ${VECTOR_INDEX.refine}); exact search p50 ${r.exactP50.toFixed(1)} ms, p99 ${r.exactP99.toFixed(1)} ms`,
    );
  }
  if (args.grid !== undefined) {
    const grid = await vectorGrid(
      table,
      queries
        .slice(0, RECALL_QUERIES)
        .map((q) => ({ vector: q.vector, where: `collection_name IN ('${q.tenant}')` })),
      gridOf(args.grid.split(',').map(Number), parseRefines(args.refines)),
      { k: 10, limit: 10, rounds: 2 },
    );
    printGrid(
      grid,
      `ef × refine at ${rows} chunks (${VECTORS}; ${RECALL_QUERIES} queries × 2 rounds, tenant-filtered, limit 10; load ${loadavg()[0]!.toFixed(1)}):`,
    );
  }
  table.close();
  db.close();
}

async function main(): Promise<void> {
  const dir = args.dir ?? (await mkdtemp(join(tmpdir(), 'kilde-bench-search-')));
  console.log(
    `search bench: up to ${CHUNKS} chunks (${STEPS.join(', ')}), ${QUERIES} queries per cell, k=${K}, dim ${DIM}, vector index from ${VECTOR_INDEX.minRows} rows, LanceDB index cache ${INDEX_CACHE_MB} MiB, ${dir}`,
  );
  const queries: Query[] = Array.from({ length: QUERIES }, (_, i) => {
    const text = Array.from({ length: 2 + (i % 3) }, queryWord).join(' ');
    return {
      text,
      terms: analyzer.query(text, ['english']).terms.join(' '),
      vector: REAL ? realRow(REAL.queries, i % (REAL.queries.length / DIM)) : clustered(0.8),
      tenant: `tenant-${i % TENANTS}`,
    };
  });
  const vectors = new Map(queries.map((q) => [q.text, q.vector]));
  try {
    let have = 0;
    {
      const db = await connect(dir);
      if ((await db.tableNames()).includes(COLLECTION)) {
        const t = await db.openTable(COLLECTION);
        have = await t.countRows();
        t.close();
        console.log(`reusing the ${have} chunks in --dir`);
      }
      db.close();
    }
    let generated = 0;
    for (const rows of STEPS) {
      if (have > rows) {
        // A kept --dir larger than this step: the table cannot shrink, so this step is not measured.
        console.log(`skipping ${rows} chunks: the table in --dir already holds ${have}`);
        continue;
      }
      if (have < rows) {
        // Regenerating the chunks already there keeps the random stream (and so the data) identical.
        for (; generated < have; generated++) chunk(generated);
        await grow(dir, have, rows);
      }
      have = Math.max(have, rows);
      generated = Math.max(generated, rows);
      if (!args['grow-only']) await measureAt(dir, rows, queries, vectors);
    }
  } finally {
    if (!args.dir) await rm(dir, { recursive: true, force: true });
  }
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

await main();
