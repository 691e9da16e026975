import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { type IndexFilter, type IndexPoint, pointId } from '../src/index/contract.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import type { VectorIndex } from '../src/index/store.js';
import { mulberry32, percentile } from './lib/stats.js';

/**
 * `npm run bench:index`: upsert and query throughput of the embedded LanceDB index on synthetic
 * chunks. Prints figures only; nothing here asserts a time.
 *   --points 100000 --dim 384 (0 = lexical-only) --batch 1000 --queries 200 --limit 10 --tenants 10
 */
const { values: args } = parseArgs({
  options: {
    points: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    batch: { type: 'string', default: '1000' },
    queries: { type: 'string', default: '200' },
    limit: { type: 'string', default: '10' },
    tenants: { type: 'string', default: '10' },
    dir: { type: 'string' },
  },
});
const POINTS = Number(args.points);
const DIM = Number(args.dim);
const BATCH = Number(args.batch);
const QUERIES = Number(args.queries);
const LIMIT = Number(args.limit);
const TENANTS = Number(args.tenants);

const rand = mulberry32(42);

// A Zipf-ish vocabulary of pronounceable pseudo-words, so BM25 sees realistic term statistics.
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ne',
  'ru',
  'sa',
  'ti',
  'vo',
  'de',
  'ha',
  'jo',
  'pe',
  'gu',
  'fi',
  'bo',
  'ly',
];
const VOCAB = Array.from({ length: 8000 }, (_, i) => {
  let w = '';
  let n = i + 1;
  do {
    w += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return w;
});
function word(): string {
  return VOCAB[Math.floor(VOCAB.length * rand() ** 3)]!;
}
function text(words: number): string {
  return Array.from({ length: words }, word).join(' ');
}

// Vectors cluster around a few hundred topic centres, as embeddings of real chunks do.
const CENTRES = Array.from({ length: 256 }, () => Array.from({ length: DIM }, () => rand() * 2 - 1));
function vector(): number[] {
  const c = CENTRES[Math.floor(rand() * CENTRES.length)]!;
  const v = c.map((x) => x + (rand() * 2 - 1) * 0.6);
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / norm);
}

function chunk(n: number): IndexPoint {
  const fileId = `file-${Math.floor(n / 20)}`;
  const splitId = n % 20;
  return {
    id: pointId(fileId, 'v1', splitId),
    content: text(80 + Math.floor(rand() * 120)),
    meta: {
      collection_name: `tenant-${Math.floor(n / 20) % TENANTS}`,
      collection_type: 'knowledge',
      file_id: fileId,
      ingest_version: 'v1',
      split_id: splitId,
      name: `${fileId}.md`,
      languages: ['en'],
    },
    ...(DIM > 0 ? { dense: vector() } : {}),
  };
}

function report(name: string, timings: number[], units: number, unit: string): void {
  const sorted = [...timings].sort((a, b) => a - b);
  const total = timings.reduce((a, b) => a + b, 0);
  console.log(
    `${name.padEnd(22)} ${((units / total) * 1000).toFixed(1).padStart(9)} ${unit}/s   p50 ${percentile(
      sorted,
      50,
    )
      .toFixed(2)
      .padStart(8)} ms   p99 ${percentile(sorted, 99).toFixed(2).padStart(8)} ms   (n=${timings.length})`,
  );
}

async function timeQueries(name: string, run: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 5; i++) await run(i); // warm caches
  const timings: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const t0 = performance.now();
    await run(i);
    timings.push(performance.now() - t0);
  }
  report(name, timings, QUERIES, 'q');
}

async function main(): Promise<void> {
  const dir = args.dir ?? (await mkdtemp(join(tmpdir(), 'kilde-bench-index-')));
  const log = pino({ level: 'silent' });
  const index: VectorIndex = await createLanceIndex(
    {
      uri: dir,
      collection: 'bench',
      sparse: true,
      timeoutMs: 120_000,
      ...(DIM > 0 ? { denseDim: DIM } : {}),
    },
    { log },
  );
  console.log(
    `LanceDB index bench: ${POINTS} chunks, dim ${DIM || 'none (lexical-only)'}, batch ${BATCH}, ${dir}`,
  );
  try {
    await index.ensureCollection();
    const batchTimes: number[] = [];
    for (let start = 0; start < POINTS; start += BATCH) {
      const points = Array.from({ length: Math.min(BATCH, POINTS - start) }, (_, k) => chunk(start + k));
      const t0 = performance.now();
      await index.upsert(points);
      batchTimes.push(performance.now() - t0);
    }
    report(`upsert (${BATCH}/batch)`, batchTimes, POINTS, 'pts');
    console.log(`count: ${await index.count({})}`);

    const tenant = (i: number): IndexFilter => ({ collectionNames: [`tenant-${i % TENANTS}`] });
    const queryText = () => `${word()} ${word()} ${word()} ${word()}`;
    if (DIM > 0) {
      await timeQueries('dense (1 tenant)', (i) => index.searchDense(vector(), tenant(i), LIMIT));
      await timeQueries('dense (all)', () => index.searchDense(vector(), {}, LIMIT));
    }
    await timeQueries('lexical (1 tenant)', (i) =>
      index.searchLexical({ text: queryText() }, tenant(i), LIMIT),
    );
    await timeQueries('lexical (all)', () => index.searchLexical({ text: queryText() }, {}, LIMIT));
    await timeQueries('hybrid (1 tenant)', (i) =>
      index.searchHybrid({ text: queryText(), ...(DIM > 0 ? { dense: vector() } : {}) }, tenant(i), LIMIT),
    );
    // Re-ingesting a file: write version v2 of one file, then delete its other versions.
    const reingest: number[] = [];
    for (let f = 0; f < 20; f++) {
      const fileId = `file-${f}`;
      const points = Array.from({ length: 20 }, (_, s) => ({
        ...chunk(f * 20 + s),
        id: pointId(fileId, 'v2', s),
      })).map((p) => ({ ...p, meta: { ...p.meta, ingest_version: 'v2' } }));
      const t0 = performance.now();
      await index.upsert(points);
      await index.deleteWhere({ fileId, notIngestVersion: 'v2' });
      reingest.push(performance.now() - t0);
    }
    report('re-ingest file (20 ch.)', reingest, reingest.length, 'files');
  } finally {
    await index.close();
    if (!args.dir) await rm(dir, { recursive: true, force: true });
  }
}

await main();
