/**
 * `npm run bench:vs-langchain-search`: Kilde's `POST /search` against what a TypeScript user would
 * deploy instead, LangChain.js's LanceDB store (`similaritySearch`) behind a minimal `node:http`
 * server, on the same chunks, the same vectors and the same embedder. Prints figures; asserts nothing.
 *
 * - Corpus: SciFact abstracts (KILDE_BENCH_DATA), fifty to a .txt file, chunked once by Kilde's own
 *   `kilde ingest` (word chunks, no overlap) into its LanceDB index; about `--chunks` chunks. Past one
 *   pass over the corpus (≈ 11k chunks) each further pass is chunked at a slightly larger size, so
 *   every chunk's text is distinct (Kilde's search drops duplicate texts; a peer would not).
 * - The same chunks and the very vectors Kilde wrote are put into LangChain's store through its own
 *   `addVectors` (bench/vs-langchain/search-build.mjs): one set of document vectors for both.
 * - One embedder for every query: the tests' wire-exact fake OpenAI embeddings server in its own
 *   process (a hashed bag of words, no model cost); Kilde reaches it with `EMBEDDING_PROVIDER=http-compat`,
 *   LangChain with `OpenAIEmbeddings`; both send the bare query (Kilde's query prefix set empty).
 * - Every server is a fresh process per round (`kilde serve retrieve` from dist/; `node
 *   bench/vs-langchain/search-server.mjs`); the order of the variants rotates between rounds. Each
 *   runs every query at concurrency 1 and then 8 (after a warm-up); q/s per round (median printed),
 *   p50/p99 over all rounds' latencies, peak RSS of the server's process tree.
 * - Like for like: overlap@k of each Kilde variant's result texts with LangChain's, per query.
 *   LangChain's store has no full-text or hybrid search, so Kilde's hybrid and lexical variants are
 *   printed without a ratio. LlamaIndex.TS has no LanceDB vector store (docs/performance.md).
 *
 * - `floor-dense` (not run unless named): the floor of any server on Kilde's index, a bare `node:http`
 *   server that embeds the query and sends the adapter's LanceDB query, nothing else
 *   (bench/search-floor-server.mjs). LangChain's p50 over the floor's is the most any server on this
 *   index could reach against LangChain.js.
 *
 * - Kilde's index is settled after the ingest (one optimize, then the dense index the writer's next
 *   optimize would build), as a running `kilde serve ingest` leaves it.
 *
 * Usage: npm run bench:vs-langchain-search [-- --chunks 10000 --queries 200 --rounds 3 --k 10
 *        --variants kilde-dense,langchain-dense,kilde-hybrid,kilde-lexical[,floor-dense] --dir <keep the indexes>
 *        --min-rows 5000 --ann-min-rows 200000 --ef 100 --refine 0 (Kilde's LANCEDB_VECTOR_INDEX_*)
 *        --grid 100,200,400,800 --refines none,2,5,10 (recall@10 and latency of the raw dense query
 *        over every ef × refine factor, against exact search)
 *        --interleave (instead of the rounds: every variant's server up at once, each query sent to
 *        each of them in turn, c=1, so a loaded machine weighs on all of them alike)]
 */
import { type ChildProcess, execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { withMallocTunables, withYoungGenerationFlag } from '../src/cli/process-memory.js';
import { DENSE_COLUMN } from '../src/index/lancedb-rows.js';
import {
  buildVectorIndexIfDue,
  DEFAULT_VECTOR_INDEX,
  isDenseIndex,
  type VectorIndexSettings,
} from '../src/index/lancedb-vector-index.js';
import { hashEmbedding } from '../test/fakes/hash-embedding.js';
import { benchData, FIXTURE_TOKENIZER } from './lib/data.js';
import { cpuMsOf } from './lib/proc-cpu.js';
import { spawnServer } from './lib/server-process.js';
import { percentile } from './lib/stats.js';
import { treeRss } from './lib/tree-rss.js';
import { gridOf, parseRefines, printGrid, vectorGrid } from './lib/vector-grid.js';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: '10000' },
    queries: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    k: { type: 'string', default: '10' },
    words: { type: 'string', default: '100' },
    variants: { type: 'string', default: 'kilde-dense,langchain-dense,kilde-hybrid,kilde-lexical' },
    dir: { type: 'string' },
    'min-rows': { type: 'string', default: String(DEFAULT_VECTOR_INDEX.minRows) },
    'ann-min-rows': { type: 'string', default: String(DEFAULT_VECTOR_INDEX.annMinRows) },
    ef: { type: 'string', default: String(DEFAULT_VECTOR_INDEX.ef) },
    refine: { type: 'string', default: String(DEFAULT_VECTOR_INDEX.refine) },
    grid: { type: 'string' },
    interleave: { type: 'boolean', default: false },
    refines: { type: 'string', default: 'none,2,5,10' },
  },
});
const CHUNKS = Number(args.chunks);
const QUERIES = Number(args.queries);
const ROUNDS = Number(args.rounds);
const K = Number(args.k);
/** Words per chunk in the first pass over the corpus; pass p uses WORDS + 3p. */
const WORDS = Number(args.words);
const DIM = 384;
const COLLECTION = 'scifact';
const TABLE = 'ingestion_files';
const MODEL = 'fake-embed';
const API_KEY = 'bench-key-0123456789abcdef';
const CONCURRENCY = [1, 8];
const ABSTRACTS_PER_FILE = 50;
/** Kilde's dense index settings, for its ingest, the settling step and its server alike. */
const VECTOR_INDEX: VectorIndexSettings = {
  minRows: Number(args['min-rows']),
  annMinRows: Number(args['ann-min-rows']),
  ef: Number(args.ef),
  refine: Number(args.refine),
};

const VARIANTS = ['kilde-dense', 'langchain-dense', 'kilde-hybrid', 'kilde-lexical', 'floor-dense'] as const;
type Variant = (typeof VARIANTS)[number];
const variants = args.variants
  .split(',')
  .filter((v): v is Variant => (VARIANTS as readonly string[]).includes(v));

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const ROOT = here('../');
const LC_DIR = here('./vs-langchain/');
const load = () => loadavg()[0]!.toFixed(1);

const corpusPath = benchData('scifact', 'corpus.jsonl');
const queriesPath = benchData('scifact', 'queries-train.jsonl');

if (!existsSync(join(ROOT, 'dist/cli/main.js'))) {
  console.error('bench: dist/ is missing; run `npm run build` first (kilde serve runs from dist/).');
  process.exit(2);
}
if (!existsSync(join(LC_DIR, 'node_modules'))) {
  console.log('installing the LangChain.js side into bench/vs-langchain/ (npm ci --legacy-peer-deps) ...');
  execFileSync('npm', ['ci', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: LC_DIR,
    stdio: 'inherit',
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

function kildeEnv(dir: string, embedUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    // What the `kilde` launcher (bin/kilde) gives every Kilde process.
    GLIBC_TUNABLES: withMallocTunables(undefined),
    NODE_OPTIONS: withYoungGenerationFlag(undefined),
    API_KEY,
    KILDE_DATA_DIR: join(dir, 'kilde-data'),
    VECTORDB_URI: join(dir, 'kilde-lancedb'),
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: embedUrl,
    EMBEDDING_MODEL: MODEL,
    EMBEDDING_DIM: String(DIM),
    EMBEDDING_PREFIX_DOC: '',
    EMBEDDING_PREFIX_QUERY: '',
    TOKENIZER_MODEL: FIXTURE_TOKENIZER,
    EXTRACTION_ENGINE: 'inprocess',
    ENABLE_QUERY_GENERATION: 'false',
    LANCEDB_VECTOR_INDEX_MIN_ROWS: String(VECTOR_INDEX.minRows),
    LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS: String(VECTOR_INDEX.annMinRows),
    LANCEDB_VECTOR_INDEX_EF: String(VECTOR_INDEX.ef),
    LANCEDB_VECTOR_INDEX_REFINE: String(VECTOR_INDEX.refine),
    HOST: '127.0.0.1',
    PORT: '0',
    ...extra,
  };
}

interface Built {
  chunks: number;
  passes: number;
  files: number;
  ingestSeconds: number;
  settled?: string;
}

/** Writes the corpus as files, ingests them with `kilde ingest`, exports chunks and vectors, builds LangChain's store. */
async function build(dir: string, embedUrl: string): Promise<Built> {
  const abstracts = (await readFile(corpusPath, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const row = JSON.parse(l) as { title: string; text: string };
      return `${row.title}\n\n${row.text}`;
    });
  const groups: string[] = [];
  for (let i = 0; i < abstracts.length; i += ABSTRACTS_PER_FILE) {
    groups.push(abstracts.slice(i, i + ABSTRACTS_PER_FILE).join('\n\n'));
  }
  const wordsOf = (s: string) => s.split(/\s+/).filter(Boolean).length;
  let estimated = 0;
  let passes = 0;
  let files = 0;
  let ingestSeconds = 0;
  for (let pass = 0; estimated < CHUNKS; pass++) {
    const size = WORDS + 3 * pass;
    const folder = join(dir, `corpus-${pass}`);
    await mkdir(folder, { recursive: true });
    for (const [g, text] of groups.entries()) {
      if (estimated >= CHUNKS) break;
      // File names carry the pass: the CLI's file_id comes from the name, and a repeat would replace.
      await writeFile(join(folder, `p${pass}-g${g}.txt`), text);
      estimated += Math.ceil(wordsOf(text) / size);
      files++;
    }
    const t0 = performance.now();
    const res = spawnSync(
      process.execPath,
      [join(ROOT, 'bin/kilde.js'), 'ingest', folder, '--collection', COLLECTION, '--concurrency', '8'],
      {
        env: kildeEnv(dir, embedUrl, {
          CHUNK_SPLIT_BY: 'word',
          CHUNK_SIZE: String(size),
          CHUNK_OVERLAP: '0',
        }),
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      },
    );
    ingestSeconds += (performance.now() - t0) / 1000;
    if (res.status !== 0) throw new Error(`kilde ingest failed (${res.status}):\n${res.stderr.slice(-4000)}`);
    console.log(`  pass ${pass}: ${res.stderr.trim().split('\n').at(-1)} (load ${load()})`);
    passes++;
  }

  // Settle Kilde's index as a running `kilde serve ingest` would once its deferred optimize has come
  // (`kilde ingest` exits before that: up to half the rows of the last passes would stay outside
  // every index, searched by brute force): one optimize, then the dense index the writer's next
  // optimize would build or replace.
  const db = await connect(join(dir, 'kilde-lancedb'));
  const table = await db.openTable(TABLE);
  const s0 = performance.now();
  await table.optimize();
  await buildVectorIndexIfDue(table, VECTOR_INDEX, {
    log: pino({ level: 'silent' }),
    now: () => performance.now(),
  });
  const dense = (await table.listIndices()).filter(isDenseIndex);
  const stats = await Promise.all(dense.map((i) => table.indexStats(i.name)));
  const settled = `${((performance.now() - s0) / 1000).toFixed(1)} s; dense index: ${dense.map((i, n) => `${i.name} (${i.indexType}, ${stats[n]?.numIndexedRows} rows in it, ${stats[n]?.numUnindexedRows} not)`).join(', ') || 'none'}`;
  console.log(`  settled: ${settled}`);

  // Export what Kilde wrote: the chunk texts and their vectors, for the other store.
  const rows = (await table
    .query()
    .where(`collection_name = '${COLLECTION}'`)
    .select(['id', 'content', DENSE_COLUMN])
    .toArray()) as Array<{ id: string; content: string; [DENSE_COLUMN]: { toArray(): Float32Array } }>;
  table.close();
  db.close();
  const vectors = new Float32Array(rows.length * DIM);
  rows.forEach((r, i) => {
    vectors.set(r[DENSE_COLUMN].toArray(), i * DIM);
  });
  await writeFile(
    join(dir, 'chunks.jsonl'),
    rows.map((r) => JSON.stringify({ id: r.id, text: r.content })).join('\n'),
  );
  await writeFile(join(dir, 'vectors.f32'), new Uint8Array(vectors.buffer));
  const lc = spawnSync(
    process.execPath,
    [
      join(LC_DIR, 'search-build.mjs'),
      join(dir, 'chunks.jsonl'),
      join(dir, 'vectors.f32'),
      String(DIM),
      join(dir, 'langchain-lancedb'),
    ],
    { encoding: 'utf8' },
  );
  if (lc.status !== 0)
    throw new Error(`LangChain store build failed (${lc.status}):\n${lc.stderr.slice(-4000)}`);
  const built: Built = { chunks: rows.length, passes, files, ingestSeconds, settled };
  await writeFile(join(dir, 'built.json'), JSON.stringify(built));
  return built;
}

interface Server {
  child: ChildProcess;
  search: (q: string) => Promise<string[]>;
}

/** A server of the bench's own (`POST /search` `{query, k}` → `{documents}`) that prints `listening <url>`. */
async function plainServer(
  variant: Variant,
  side: string,
  cmd: string[],
  env: NodeJS.ProcessEnv,
): Promise<Server> {
  const s = spawnServer(cmd, env, /listening (http:\/\/\S+)/, variant);
  const url = await s.url;
  return {
    child: s.child,
    search: async (query) =>
      ((await postSearch(side, url, {}, { query, k: K })) as { documents: string[] }).documents,
  };
}

async function startServer(variant: Variant, dir: string, embedUrl: string): Promise<Server> {
  if (variant === 'langchain-dense') {
    return plainServer(
      variant,
      'LangChain',
      [process.execPath, join(LC_DIR, 'search-server.mjs'), join(dir, 'langchain-lancedb'), embedUrl, MODEL],
      { PATH: process.env.PATH, HOME: process.env.HOME },
    );
  }
  if (variant === 'floor-dense') {
    // The floor: a bare server on Kilde's index (bench/search-floor-server.mjs), Kilde's memory settings.
    const env = kildeEnv(dir, embedUrl);
    return plainServer(
      variant,
      'the floor',
      [
        process.execPath,
        here('./search-floor-server.mjs'),
        join(dir, 'kilde-lancedb'),
        TABLE,
        COLLECTION,
        embedUrl,
        MODEL,
      ],
      { PATH: env.PATH, HOME: env.HOME, GLIBC_TUNABLES: env.GLIBC_TUNABLES, NODE_OPTIONS: env.NODE_OPTIONS },
    );
  }
  const extra: Record<string, string> = { LOG_LEVEL_APP: 'info' };
  if (variant === 'kilde-hybrid') extra.ENABLE_HYBRID_SEARCH = 'true';
  if (variant === 'kilde-lexical') {
    extra.EMBEDDING_PROVIDER = 'none';
  }
  const s = spawnServer(
    [process.execPath, join(ROOT, 'bin/kilde.js'), 'serve', 'retrieve'],
    kildeEnv(dir, embedUrl, extra),
    /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"kilde listening"/,
    variant,
  );
  const url = await s.url;
  return {
    child: s.child,
    search: async (query) => {
      const body = { queries: [query], collection_names: [COLLECTION], k: K };
      const answer = await postSearch('Kilde', url, { authorization: `Bearer ${API_KEY}` }, body);
      return (answer as { documents: string[][] }).documents[0]!;
    },
  };
}

/** `POST <url>/search` with a JSON body; anything but a 200 is an error naming the side. */
async function postSearch(
  side: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<unknown> {
  const res = await fetch(`${url}/search`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${side} ${res.status}: ${await res.text()}`);
  return res.json();
}

/** Every query once, `concurrency` clients pulling from one queue; latencies and wall time. */
async function drive(queries: string[], concurrency: number, search: (q: string) => Promise<string[]>) {
  const lat: number[] = [];
  const results: string[][] = new Array(queries.length);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < queries.length; i = next++) {
        const s = performance.now();
        results[i] = await search(queries[i]!);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { lat, qps: (queries.length / (performance.now() - t0)) * 1000, results };
}

interface Cell {
  lat: number[];
  qps: number[];
  /** CPU milliseconds of the server's process over the cell's queries, and how many there were. */
  cpuMs: number;
  cpuQueries: number;
}

async function main(): Promise<void> {
  const dir = args.dir ?? (await mkdtemp(join(tmpdir(), 'kilde-vs-langchain-search-')));
  await mkdir(dir, { recursive: true });
  const embed = spawnServer(
    [process.execPath, '--import', 'tsx', here('./vs-langchain-search-embed.ts'), String(DIM)],
    { PATH: process.env.PATH, HOME: process.env.HOME },
    /(http:\/\/\S+\/v1)/,
    'embeddings server',
  );
  const embedUrl = await embed.url;
  try {
    console.log(
      `search vs LangChain.js: ~${CHUNKS} chunks, ${QUERIES} queries, k=${K}, ${ROUNDS} rounds, ${dir}`,
    );
    console.log(`load average at start ${load()}`);
    let built: Built;
    if (existsSync(join(dir, 'built.json'))) {
      built = JSON.parse(await readFile(join(dir, 'built.json'), 'utf8')) as Built;
      console.log('reusing the indexes in --dir');
    } else {
      console.log(
        'building: kilde ingest (word chunks), then the same chunks and vectors into LangChain’s store',
      );
      built = await build(dir, embedUrl);
    }
    console.log(
      `corpus: ${built.chunks} chunks from ${built.files} files (${built.passes} pass(es) over SciFact, ${WORDS}+3·pass words a chunk); kilde ingest ${built.ingestSeconds.toFixed(1)} s; settled ${built.settled ?? '-'}`,
    );

    const queries = (await readFile(queriesPath, 'utf8'))
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(0, QUERIES)
      .map((l) => (JSON.parse(l) as { text: string }).text);

    if (args.grid !== undefined) {
      const db = await connect(join(dir, 'kilde-lancedb'));
      const table = await db.openTable(TABLE);
      const grid = await vectorGrid(
        table,
        queries
          .slice(0, 100)
          .map((q) => ({ vector: hashEmbedding(q, DIM), where: `collection_name IN ('${COLLECTION}')` })),
        gridOf(args.grid.split(',').map(Number), parseRefines(args.refines)),
        { k: K, limit: 2 * K, rounds: 2 },
      );
      printGrid(
        grid,
        `ef × refine of Kilde's dense index (bag-of-words vectors; 100 queries × 2 rounds, limit ${2 * K} as /search over-fetches; load ${load()}):`,
      );
      table.close();
      db.close();
    }

    if (args.interleave) {
      await interleaved(queries, dir, embedUrl);
      return;
    }

    const cells = new Map<string, Cell>();
    const firstResults = new Map<Variant, string[][]>();
    const peakRss = new Map<Variant, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
      for (const variant of order) {
        const server = await startServer(variant, dir, embedUrl);
        let peak = 0;
        const sampler = setInterval(() => {
          peak = Math.max(peak, treeRss(server.child.pid));
        }, 50);
        try {
          for (const q of queries.slice(0, 20)) await server.search(q); // warm-up
          for (const c of CONCURRENCY) {
            const cpu0 = cpuMsOf(server.child.pid);
            const r = await drive(queries, c, server.search);
            const cpu1 = cpuMsOf(server.child.pid);
            const cell = cells.get(`${variant}/${c}`) ?? { lat: [], qps: [], cpuMs: 0, cpuQueries: 0 };
            cell.lat.push(...r.lat);
            cell.qps.push(r.qps);
            if (cpu0 !== undefined && cpu1 !== undefined) {
              cell.cpuMs += cpu1 - cpu0;
              cell.cpuQueries += queries.length;
            }
            cells.set(`${variant}/${c}`, cell);
            if (c === 1 && !firstResults.has(variant)) firstResults.set(variant, r.results);
          }
        } finally {
          clearInterval(sampler);
          peak = Math.max(peak, treeRss(server.child.pid));
          await stop(server.child);
        }
        peakRss.set(variant, Math.max(peakRss.get(variant) ?? 0, peak));
      }
      console.log(`round ${round + 1}/${ROUNDS} done (${order.join(', ')}); load ${load()}`);
    }

    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
    };
    const fig = (variant: Variant, c: number) => {
      const cell = cells.get(`${variant}/${c}`)!;
      const lat = [...cell.lat].sort((a, b) => a - b);
      const cpu = cell.cpuQueries > 0 ? cell.cpuMs / cell.cpuQueries : undefined;
      return { qps: median(cell.qps), p50: percentile(lat, 50), p99: percentile(lat, 99), cpu };
    };
    const peer = variants.includes('langchain-dense') ? firstResults.get('langchain-dense') : undefined;
    const rows: string[][] = [];
    for (const variant of variants) {
      const overlap = peer
        ? (() => {
            const mine = firstResults.get(variant)!;
            let shared = 0;
            let wanted = 0;
            mine.forEach((docs, i) => {
              const theirs = new Set(peer[i]);
              shared += docs.filter((d) => theirs.has(d)).length;
              wanted += Math.min(K, peer[i]!.length);
            });
            return (shared / wanted).toFixed(3);
          })()
        : '-';
      for (const c of CONCURRENCY) {
        const f = fig(variant, c);
        const lc = variants.includes('langchain-dense') ? fig('langchain-dense', c) : undefined;
        rows.push([
          variant,
          String(c),
          f.qps.toFixed(1),
          f.p50.toFixed(2),
          f.p99.toFixed(2),
          f.cpu === undefined ? '-' : f.cpu.toFixed(2),
          `${((peakRss.get(variant) ?? 0) / 1024 / 1024).toFixed(0)}`,
          (variant === 'kilde-dense' || variant === 'floor-dense') && lc
            ? `${(f.qps / lc.qps).toFixed(2)}×`
            : '-',
          (variant === 'kilde-dense' || variant === 'floor-dense') && lc
            ? `${(f.p50 / lc.p50).toFixed(2)}`
            : '-',
          overlap,
        ]);
      }
    }
    printTable(
      [
        'variant',
        'conc',
        'q/s (median)',
        'p50 ms',
        'p99 ms',
        'server CPU ms/q',
        'peak RSS MiB',
        'q/s Kilde/LC',
        'p50 Kilde/LC',
        `overlap@${K} with LC`,
      ],
      rows,
    );
    console.log(
      `load average at end ${load()}. Server CPU: user + system time of the server's process (all threads) over the cell's queries, per query. Ratios: kilde-dense (and floor-dense, a bare server on Kilde's index) over langchain-dense (LangChain's store has no lexical or hybrid search; those rows have no peer, their overlap shows how far their results differ).`,
    );
  } finally {
    await stop(embed.child);
    if (!args.dir) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `--interleave`: every variant's server at once, each query sent to each in turn (the order
 * rotating with the query and the round), one at a time. Under a load that comes and goes, all
 * variants see the same minutes, so their ratio moves far less than between separate rounds.
 */
async function interleaved(queries: string[], dir: string, embedUrl: string): Promise<void> {
  const servers: Server[] = [];
  try {
    for (const variant of variants) servers.push(await startServer(variant, dir, embedUrl));
    for (const q of queries.slice(0, 20)) for (const server of servers) await server.search(q); // warm-up
    const lat = servers.map((): number[] => []);
    const cpu0 = servers.map((server) => cpuMsOf(server.child.pid));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, q] of queries.entries()) {
        for (let n = 0; n < servers.length; n++) {
          const at = (n + i + round) % servers.length;
          const t0 = performance.now();
          await servers[at]!.search(q);
          lat[at]!.push(performance.now() - t0);
        }
      }
      console.log(`round ${round + 1}/${ROUNDS} done (interleaved); load ${load()}`);
    }
    const cpu = servers.map((server, n) => {
      const end = cpuMsOf(server.child.pid);
      const start = cpu0[n];
      return end === undefined || start === undefined ? undefined : (end - start) / (queries.length * ROUNDS);
    });
    const p50 = lat.map((l) =>
      percentile(
        [...l].sort((a, b) => a - b),
        50,
      ),
    );
    const lc = variants.indexOf('langchain-dense');
    printTable(
      ['variant', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU ms/q', 'p50 LC/this'],
      variants.map((variant, n) => {
        const sorted = [...lat[n]!].sort((a, b) => a - b);
        const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
        return [
          variant,
          p50[n]!.toFixed(2),
          percentile(sorted, 99).toFixed(2),
          mean.toFixed(2),
          cpu[n] === undefined ? '-' : cpu[n]!.toFixed(2),
          (variant === 'kilde-dense' || variant === 'floor-dense') && lc >= 0
            ? `${(p50[lc]! / p50[n]!).toFixed(2)}×`
            : '-',
        ];
      }),
    );
    console.log(
      `load average at end ${load()}. c=1, ${queries.length} queries × ${ROUNDS} round(s) per variant, interleaved query by query.`,
    );
  } finally {
    for (const server of servers) await stop(server.child);
  }
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

await main();
