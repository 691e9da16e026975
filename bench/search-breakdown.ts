/**
 * `npm run bench:search-breakdown`: where one dense `POST /search` spends its time at concurrency 1,
 * on an index left by `npm run bench:vs-langchain-search -- --dir <dir>` (SciFact chunks, the fake
 * OpenAI embeddings server in a process of its own). Every stage is measured on its own, query by
 * query, the stages in rotating order, so each figure is taken under the same load as the others:
 *
 * - `embed float` / `embed base64`: one `POST /v1/embeddings` for the query through `fetch`, read
 *   as numbers (`encoding_format` float, then base64): the bare round trip.
 * - `embed kilde`: the configured embedder's `embedQuery` (Kilde's client, its checks included).
 * - `lance raw`: the query the adapter sends (tenant prefilter, cosine, id/content/meta, 2k rows),
 *   straight to LanceDB, `toArray()`; `lance arrow`: read as Arrow (`toArrow()`); `lance nofilter`,
 *   `lance idonly`, `lance post`: without the tenant filter, only `id`, the filter as a postfilter.
 * - `index dense`: the adapter's `searchDense` (its read of the Arrow batches, the rows parsed).
 * - `embed+index`: the two one after the other, as a search runs them.
 * - `service`: the search service (embed, search, dedup), no HTTP.
 * - `inject`: `POST /search` through Fastify without a socket (`app.inject`: auth, zod, JSON, hooks).
 * - `http`: `POST /search` over loopback to the same app, listening.
 * - `bare http`: the floor of any HTTP server on this index (bench/search-floor-server.mjs, the
 *   `floor-dense` of bench:vs-langchain-search): a bare `node:http` server that embeds the query and
 *   sends the adapter's query straight to LanceDB. No auth, validation, logging or dedup.
 * - `langchain http`: LangChain.js's server (bench/vs-langchain/search-server.mjs) on the same run's
 *   LangChain table, when it is there. These two run in processes of their own, so their CPU is not
 *   in this process's column, and they are the pair to compare: Kilde's app (`http`) shares this
 *   process, whose LanceDB threads the other stages keep busy.
 *   Against it, LangChain's p50 over `bare http`'s is the most any server on this index could reach.
 *
 * Prints p50/p99 per stage and the CPU time of this process (all threads: the client, the app and
 * LanceDB's) per query of each stage. Asserts nothing.
 * Usage: npm run bench:search-breakdown -- --dir <vs-langchain-search dir> [--queries 200 --rounds 3 --k 10]
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connect } from '@lancedb/lancedb';
import { Registry } from 'prom-client';
import { parseConfig } from '../src/config/parse.js';
import { retrieveSchema } from '../src/config/retrieve.js';
import { createDenseEmbedder } from '../src/embed/create-dense.js';
import { buildApp } from '../src/http/app.js';
import { createLogger } from '../src/http/logger.js';
import { DENSE_COLUMN } from '../src/index/lancedb-rows.js';
import { createRetrievePart } from '../src/retrieve/part.js';
import { benchData } from './lib/data.js';
import { spawnServer } from './lib/server-process.js';
import { percentile } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    dir: { type: 'string' },
    queries: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    k: { type: 'string', default: '10' },
  },
});
if (!args.dir) {
  console.error('bench: --dir <the directory of a bench:vs-langchain-search run> is required');
  process.exit(2);
}
const DIR = args.dir;
const K = Number(args.k);
const DIM = 384;
const COLLECTION = 'scifact';
const TABLE = 'ingestion_files';
const API_KEY = 'bench-key-0123456789abcdef';
const load = () => loadavg()[0]!.toFixed(1);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const embed = spawnServer(
  [process.execPath, '--import', 'tsx', here('./vs-langchain-search-embed.ts'), String(DIM)],
  process.env,
  /(http:\/\/\S+\/v1)/,
  'embeddings server',
);
const embedUrl = await embed.url;
// LangChain's server on the same run's table (bench:vs-langchain-search leaves it beside Kilde's).
const lcTable = join(DIR, 'langchain-lancedb');
const lcServer = existsSync(lcTable)
  ? spawnServer(
      [process.execPath, here('./vs-langchain/search-server.mjs'), lcTable, embedUrl, 'fake-embed'],
      process.env,
      /listening (http:\/\/\S+)/,
      "LangChain's server",
    )
  : undefined;
const lcUrl = await lcServer?.url;

const config = parseConfig(retrieveSchema, {
  API_KEY,
  KILDE_DATA_DIR: join(DIR, 'kilde-data'),
  VECTORDB_URI: join(DIR, 'kilde-lancedb'),
  EMBEDDING_PROVIDER: 'http-compat',
  EMBEDDING_API_BASE_URL: embedUrl,
  EMBEDDING_MODEL: 'fake-embed',
  EMBEDDING_DIM: String(DIM),
  EMBEDDING_PREFIX_DOC: '',
  EMBEDDING_PREFIX_QUERY: '',
  ENABLE_QUERY_GENERATION: 'false',
  LOG_LEVEL_APP: 'info',
});
// The request lines go where a server's would (a file descriptor), not into this process's memory.
const logger = createLogger({ ...config, LOG_FORMAT: 'json' });
const part = await createRetrievePart(config, { log: logger });
const app = await buildApp(config, { logger, parts: [part] });
await part.start?.();
const base = await app.listen({ host: '127.0.0.1', port: 0 });
// A search service of its own (the app's is made with the app's registry): the same code.
const search = part.stack.service(new Registry());
const dense = createDenseEmbedder(config, { log: logger });
if (!dense) throw new Error('no dense embedder');

const db = await connect(join(DIR, 'kilde-lancedb'));
const table = await db.openTable(TABLE);
const where = `collection_name IN ('${COLLECTION}')`;

const queries = (await readFile(benchData('scifact', 'queries-train.jsonl'), 'utf8'))
  .split('\n')
  .filter((l) => l.trim() !== '')
  .slice(0, Number(args.queries))
  .map((l) => (JSON.parse(l) as { text: string }).text);
const vectors = new Map<string, number[]>();
for (const q of queries) vectors.set(q, await dense.embedQuery(q));

async function embedFetch(q: string, format: 'float' | 'base64'): Promise<number[]> {
  const res = await fetch(`${embedUrl}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-embed', input: [q], encoding_format: format }),
  });
  const json = (await res.json()) as { data: { embedding: number[] | string }[] };
  const e = json.data[0]!.embedding;
  if (typeof e !== 'string') return e;
  const b = Buffer.from(e, 'base64');
  return Array.from(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4));
}

function raw(v: number[]) {
  return table
    .vectorSearch(v)
    .column(DENSE_COLUMN)
    .distanceType('cosine')
    .select(['id', 'content', 'meta', '_distance'])
    .where(where)
    .limit(2 * K);
}

// The floor: the bare server of bench:vs-langchain-search's `floor-dense`, in a process of its own.
const floorServer = spawnServer(
  [
    process.execPath,
    here('./search-floor-server.mjs'),
    join(DIR, 'kilde-lancedb'),
    TABLE,
    COLLECTION,
    embedUrl,
    'fake-embed',
  ],
  process.env,
  /listening (http:\/\/\S+)/,
  'the floor server',
);
const floorUrl = await floorServer.url;

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${url} ${res.status}: ${await res.text()}`);
  return res.json();
}

const STAGES: Record<string, (q: string) => Promise<unknown>> = {
  'embed float': (q) => embedFetch(q, 'float'),
  'embed base64': (q) => embedFetch(q, 'base64'),
  'embed kilde': (q) => dense.embedQuery(q),
  'lance raw': (q) => raw(vectors.get(q)!).toArray(),
  'lance arrow': (q) => raw(vectors.get(q)!).toArrow(),
  'lance nofilter': (q) =>
    table
      .vectorSearch(vectors.get(q)!)
      .column(DENSE_COLUMN)
      .distanceType('cosine')
      .select(['id', 'content', 'meta', '_distance'])
      .limit(2 * K)
      .toArray(),
  'lance idonly': (q) =>
    table
      .vectorSearch(vectors.get(q)!)
      .column(DENSE_COLUMN)
      .distanceType('cosine')
      .select(['id', '_distance'])
      .where(where)
      .limit(2 * K)
      .toArray(),
  'lance post': (q) => raw(vectors.get(q)!).postfilter().toArray(),
  'index dense': (q) =>
    part.stack.index.searchDense(vectors.get(q)!, { collectionNames: [COLLECTION] }, 2 * K),
  'embed+index': async (q) =>
    part.stack.index.searchDense(await dense.embedQuery(q), { collectionNames: [COLLECTION] }, 2 * K),
  service: (q) => search.search({ queries: [q], collection_names: [COLLECTION], k: K }),
  inject: async (q) => {
    const res = await app.inject({
      method: 'POST',
      url: '/search',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ queries: [q], collection_names: [COLLECTION], k: K }),
    });
    if (res.statusCode !== 200) throw new Error(`search ${res.statusCode}: ${res.body}`);
    return res.json();
  },
  http: (q) =>
    postJson(
      `${base}/search`,
      { queries: [q], collection_names: [COLLECTION], k: K },
      { authorization: `Bearer ${API_KEY}` },
    ),
  'bare http': (q) => postJson(`${floorUrl}/search`, { query: q, k: K }),
  ...(lcUrl ? { 'langchain http': (q: string) => postJson(`${lcUrl}/search`, { query: q, k: K }) } : {}),
};
const names = Object.keys(STAGES);
const lat = new Map<string, number[]>(names.map((n) => [n, []]));
const cpu = new Map<string, number>(names.map((n) => [n, 0]));

console.log(
  `search breakdown: ${queries.length} queries × ${args.rounds} rounds, k=${K}, ${DIR}; load ${load()}`,
);
for (const q of queries.slice(0, 20)) for (const n of names) await STAGES[n]!(q); // warm-up
for (let round = 0; round < Number(args.rounds); round++) {
  for (const [i, q] of queries.entries()) {
    for (let s = 0; s < names.length; s++) {
      const name = names[(s + i + round) % names.length]!;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await STAGES[name]!(q);
      lat.get(name)!.push(performance.now() - t0);
      const c = process.cpuUsage(cpu0);
      cpu.set(name, cpu.get(name)! + (c.user + c.system) / 1000);
    }
  }
  console.log(`round ${round + 1} done; load ${load()}`);
}
console.log('stage          p50 ms   p99 ms   CPU ms/query (this process, all threads)');
for (const n of names) {
  const s = [...lat.get(n)!].sort((a, b) => a - b);
  const perQuery = cpu.get(n)! / s.length;
  console.log(
    `${n.padEnd(13)} ${percentile(s, 50).toFixed(2).padStart(7)}  ${percentile(s, 99).toFixed(2).padStart(7)}  ${perQuery.toFixed(2).padStart(7)}`,
  );
}
const p50 = (n: string) =>
  percentile(
    [...lat.get(n)!].sort((a, b) => a - b),
    50,
  );
if (lcUrl) {
  console.log(
    `LangChain.js p50 over the bare floor's, both servers in processes of their own: ${(p50('langchain http') / p50('bare http')).toFixed(2)}× (the most any server on this index could reach); ` +
      `over Kilde's http p50: ${(p50('langchain http') / p50('http')).toFixed(2)}× (Kilde's app in this process, its LanceDB threads kept busy by the other stages)`,
  );
}
console.log(`load ${load()}`);
floorServer.child.kill('SIGTERM');
lcServer?.child.kill('SIGTERM');
await app.close();
table.close();
db.close();
embed.child.kill('SIGTERM');
