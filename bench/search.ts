import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect, type Table } from '@lancedb/lancedb';
import pino from 'pino';
import { Registry } from 'prom-client';
import { LexicalAnalyzer } from '../src/embed/bm25/analysis.js';
import type { DenseEmbedder } from '../src/embed/dense.js';
import { DENSE_VECTOR, type IndexPoint, pointId } from '../src/index/contract.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import { RRF_K } from '../src/index/rrf.js';
import { createCollectionState } from '../src/retrieve/collection-state.js';
import { createCorpusCache } from '../src/retrieve/corpus-cache.js';
import { createRetrieveMetrics } from '../src/retrieve/metrics.js';
import { createQueryLexical } from '../src/retrieve/query-lexical.js';
import { createSearchService, type SearchService } from '../src/retrieve/search-service.js';
import { hashEmbedding } from '../test/fakes/hash-embedding.js';
import { mulberry32, percentile } from './lib/stats.js';

/**
 * `npm run bench:search`: latency (p50/p99) and queries/s of dense, hybrid and lexical search through
 * the retrieval service layer (`createSearchService`: query embedding, search, fusion, dedup) at
 * concurrency 1 and 8, next to the same query sent straight to LanceDB (the floor), on an embedded
 * index of synthetic chunks. Prints figures only; nothing here asserts a time.
 *   --chunks 100000 --queries 200 --k 5 --tenants 10 --dir <keep the index here>
 */
const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    k: { type: 'string', default: '5' },
    tenants: { type: 'string', default: '10' },
    dir: { type: 'string' },
  },
});
const CHUNKS = Number(args.chunks);
const QUERIES = Number(args.queries);
const K = Number(args.k);
const TENANTS = Number(args.tenants);
const DIM = 128;
const COLLECTION = 'bench';

const rand = mulberry32(7);

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

function chunk(n: number): IndexPoint {
  const fileId = `file-${Math.floor(n / 20)}`;
  const splitId = n % 20;
  const content = Array.from({ length: 40 + Math.floor(rand() * 60) }, zipfWord).join(' ');
  return {
    id: pointId(fileId, 'v1', splitId),
    content,
    meta: {
      collection_name: `tenant-${Math.floor(n / 20) % TENANTS}`,
      collection_type: 'knowledge',
      file_id: fileId,
      ingest_version: 'v1',
      split_id: splitId,
      name: `${fileId}.md`,
    },
    dense: hashEmbedding(content, DIM),
  };
}

/** The fake servers' hashed bag-of-words model, in process: the bench measures Kilde, not a network. */
class InProcessHashEmbedder implements DenseEmbedder {
  readonly provider = 'bench-hash';
  readonly model = 'hash';
  readonly dim = DIM;
  async embedDocuments(texts: readonly string[]) {
    return texts.map((t) => hashEmbedding(t, DIM));
  }
  async embedQuery(text: string) {
    return hashEmbedding(text, DIM);
  }
}

interface Query {
  text: string;
  vector: number[];
  tenant: string;
}

const MODES = ['dense', 'hybrid', 'lexical'] as const;
type Mode = (typeof MODES)[number];

/** The service-layer search for one mode, over its own index handle (as `kilde serve retrieve` has). */
async function serviceFor(mode: Mode, dir: string): Promise<SearchService> {
  const log = pino({ level: 'silent' });
  const index = await createLanceIndex(
    { uri: dir, collection: COLLECTION, denseDim: DIM, sparse: true, timeoutMs: 60_000 },
    { log },
  );
  const analyzer = new LexicalAnalyzer('english');
  const collection = createCollectionState({ index, refreshMs: 10_000, partialRefreshMs: 1000 });
  return createSearchService({
    pipeline: {
      index,
      dense: mode === 'lexical' ? undefined : new InProcessHashEmbedder(),
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
function floorFor(mode: Mode, table: Table): (q: Query) => Promise<unknown> {
  // The pipeline over-fetches 2 × k for dedup; the hybrid adapter takes 20 per side before fusion.
  const fetchN = K * 2;
  const sideN = Math.max(fetchN * 2, 20);
  const tenantSql = (q: Query) => `collection_name IN ('${q.tenant}')`;
  const dense = (q: Query, n: number) =>
    table
      .vectorSearch(q.vector)
      .column(DENSE_VECTOR)
      .distanceType('cosine')
      .where(`${tenantSql(q)} AND \`${DENSE_VECTOR}\` IS NOT NULL`)
      .select(['id', 'content', 'meta', '_distance'])
      .limit(n)
      .toArray();
  const lexical = (q: Query, n: number) =>
    table
      .query()
      .fullTextSearch(q.text, { columns: 'content' })
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

/** Runs every query once with `concurrency` workers pulling from one queue. */
async function measure(queries: Query[], concurrency: number, run: (q: Query) => Promise<unknown>) {
  for (const q of queries.slice(0, 10)) await run(q); // warm-up: caches, lazy index loads
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < queries.length) {
        const q = queries[next++]!;
        const start = performance.now();
        await run(q);
        latencies.push(performance.now() - start);
      }
    }),
  );
  const wall = performance.now() - t0;
  latencies.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    qps: (queries.length / wall) * 1000,
  };
}

async function build(dir: string): Promise<void> {
  const log = pino({ level: 'silent' });
  const index = await createLanceIndex(
    { uri: dir, collection: COLLECTION, denseDim: DIM, sparse: true, timeoutMs: 600_000 },
    { log },
  );
  await index.ensureCollection();
  const t0 = performance.now();
  const batch = 2000;
  for (let start = 0; start < CHUNKS; start += batch) {
    await index.upsert(Array.from({ length: Math.min(batch, CHUNKS - start) }, (_, i) => chunk(start + i)));
  }
  await index.close(); // waits for queued background optimizes
  // One final optimize so the full-text index covers every row, as a settled index would.
  const db = await connect(dir);
  const table = await db.openTable(COLLECTION);
  await table.optimize();
  console.log(
    `built ${await table.countRows()} chunks (${TENANTS} tenants, dim ${DIM}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  table.close();
  db.close();
}

async function main(): Promise<void> {
  const dir = args.dir ?? (await mkdtemp(join(tmpdir(), 'kilde-bench-search-')));
  console.log(`search bench: ${CHUNKS} chunks, ${QUERIES} queries per cell, k=${K}, ${dir}`);
  try {
    const db = await connect(dir);
    if (!(await db.tableNames()).includes(COLLECTION)) await build(dir);
    else console.log('reusing the index in --dir');
    const table = await db.openTable(COLLECTION);

    const queries: Query[] = Array.from({ length: QUERIES }, (_, i) => {
      const text = Array.from({ length: 2 + (i % 3) }, queryWord).join(' ');
      return { text, vector: hashEmbedding(text, DIM), tenant: `tenant-${i % TENANTS}` };
    });

    const rows: string[][] = [];
    for (const mode of MODES) {
      const service = await serviceFor(mode, dir);
      const viaService = (q: Query) =>
        service.search({ queries: [q.text], collection_names: [q.tenant], k: K });
      const floor = floorFor(mode, table);
      // A sanity figure: a bench of searches that find nothing would measure nothing.
      const sample = await Promise.all(queries.slice(0, 20).map(viaService));
      const found = sample.reduce((n, r) => n + (r.documents[0]?.length ?? 0), 0);
      console.log(`${mode}: ${(found / sample.length).toFixed(1)} hits per query (k=${K}, first 20 queries)`);
      for (const concurrency of [1, 8]) {
        const s: Figures = await measure(queries, concurrency, viaService);
        const f: Figures = await measure(queries, concurrency, floor);
        rows.push([
          mode,
          String(concurrency),
          s.p50.toFixed(2),
          s.p99.toFixed(2),
          s.qps.toFixed(0),
          f.p50.toFixed(2),
          f.p99.toFixed(2),
          f.qps.toFixed(0),
          `${(s.p50 - f.p50).toFixed(2)}`,
        ]);
      }
    }
    printTable(
      [
        'mode',
        'conc',
        'service p50 ms',
        'p99 ms',
        'q/s',
        'lancedb p50 ms',
        'p99 ms',
        'q/s',
        'overhead p50 ms',
      ],
      rows,
    );
    table.close();
    db.close();
  } finally {
    if (!args.dir) await rm(dir, { recursive: true, force: true });
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
