import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Backend, SearchResult } from '../src/cli/backend.js';
import { createLocalBackend } from '../src/cli/local-backend.js';
import { createSparseEncoder } from '../src/embed/create-sparse.js';
import { fileIdFor } from '../src/embedded/file-ingest.js';
import type { ChunkMeta } from '../src/index/contract.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import { createCorpusCache } from '../src/retrieve/corpus-cache.js';
import { createRetrieveMetrics } from '../src/retrieve/metrics.js';
import { createSearchService } from '../src/retrieve/search-service.js';
import { benchData } from './lib/data.js';
import { breadcrumbHas, scoreRanking, sectionOf } from './quality-metrics.js';

/**
 * `npm run bench:quality`: retrieval quality of the offline default (lexical-only, embedded LanceDB)
 * on two labelled sets, through Kilde's real ingestion and retrieval (the CLI's local backend: the
 * parts of `kilde serve all`, `POST /search` answered in process). Prints a table; asserts nothing.
 *   SciFact (BEIR): 5,183 abstracts, 809 train queries, nDCG@10 / Recall@10 / MRR@10.
 *   Danish citizenship textbook: 48 chapters, 180 questions, top-1 / top-5 section accuracy.
 * Each set is also searched with the client-side BM25 path (what Qdrant collections without
 * text-sparse use), through the same service layer over the same ingested chunks.
 * Takes ~5 min on 2 cores (SciFact's 5,183 one-file ingests dominate; the Danish set takes ~20 s).
 *   --limit-queries N   only the first N queries of each set
 *   --only scifact|danish
 *   --concurrency N     files ingested at once (default 4)
 */
const { values: args } = parseArgs({
  options: {
    'limit-queries': { type: 'string' },
    only: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
  },
});
const LIMIT = args['limit-queries'] === undefined ? Number.POSITIVE_INFINITY : Number(args['limit-queries']);
const CONCURRENCY = Number(args.concurrency);
const COLLECTION = 'bench';
const log = pino({ level: 'silent' });

type Language = 'english' | 'danish';

/** The embedded defaults of `kilde serve all`, in a throwaway data directory, nothing from the shell. */
function envFor(dataDir: string, language: Language, extra: Record<string, string> = {}) {
  return { KILDE_DATA_DIR: dataDir, SPARSE_LANGUAGE: language, LOG_LEVEL: 'silent', ...extra };
}

/** Ingests every file through the local backend (the ingest service: extract, chunk, BM25, write). */
async function ingestAll(
  backend: Backend,
  dir: string,
  files: readonly string[],
  label: string,
): Promise<number> {
  let next = 0;
  let chunks = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < files.length) {
        const name = files[next++]!;
        const out = await backend.ingest({
          path: join(dir, name),
          fileId: fileIdFor(COLLECTION, name),
          filename: name,
          collection: COLLECTION,
          userId: 'bench',
          source: name,
        });
        chunks += out.chunks;
        done += 1;
        if (done % 500 === 0) process.stderr.write(`${label}: ingested ${done} of ${files.length} files\n`);
      }
    }),
  );
  return chunks;
}

/** Folds the rows written since the last background optimize into the full-text index. */
async function settle(dataDir: string): Promise<void> {
  const db = await connect(join(dataDir, 'lancedb'));
  for (const name of await db.tableNames()) {
    const table = await db.openTable(name);
    await table.optimize();
    table.close();
  }
  db.close();
}

type Search = (query: string, k: number) => Promise<ChunkMeta[]>;

const viaBackend =
  (backend: Backend): Search =>
  async (query, k) => {
    const r: SearchResult = await backend.search({ queries: [query], collection_names: [COLLECTION], k });
    return r.metadatas[0] ?? [];
  };

/**
 * The retrieval service layer in `client-bm25` mode over the same table: the collection is described
 * as having no lexical side, as a Qdrant collection without text-sparse is.
 */
async function clientBm25(dataDir: string, language: Language) {
  const settings = {
    uri: join(dataDir, 'lancedb'),
    collection: 'ingestion_files',
    sparse: true,
    timeoutMs: 600_000,
  };
  const index = await createLanceIndex(settings, { log });
  const sparse = createSparseEncoder('Qdrant/bm25', language);
  const service = createSearchService({
    pipeline: {
      index,
      sparse,
      hybrid: false,
      multiplier: 3,
      corpus: createCorpusCache({ index, encoder: sparse, maxDocs: 1_000_000, ttlMs: 3_600_000 }),
      metrics: createRetrieveMetrics(new Registry()),
      log,
    },
    collection: { current: async () => ({ exists: true, hasSparse: false, vectorNames: [] }) },
    generateQueries: false,
    lastMessages: 6,
    maxQueries: 3,
    mergeResults: false,
    log,
  });
  const search: Search = async (query, k) =>
    (await service.search({ queries: [query], collection_names: [COLLECTION], k })).metadatas[0] ?? [];
  return { search, close: () => index.close() };
}

// ---------------------------------------------------------------------------------------- SciFact

/** Chunks → documents (a document ranks where its first chunk does), scored at 10. */
async function evalScifact(
  search: Search,
  queries: { id: string; text: string }[],
  qrels: Map<string, Map<string, number>>,
) {
  const sum = { ndcg: 0, recall: 0, mrr: 0, docs: 0 };
  for (const q of queries) {
    const metas = await search(q.text, 10);
    const docs = [...new Set(metas.map((m) => String(m.source).replace(/\.txt$/, '')))];
    const s = scoreRanking(docs, qrels.get(q.id) ?? new Map(), 10);
    sum.ndcg += s.ndcg;
    sum.recall += s.recall;
    sum.mrr += s.mrr;
    sum.docs += docs.length;
  }
  const n = queries.length;
  return { ndcg: sum.ndcg / n, recall: sum.recall / n, mrr: sum.mrr / n, docs: sum.docs / n };
}

async function scifact(): Promise<void> {
  const dir = `${benchData('scifact')}/`;
  const qrels = new Map<string, Map<string, number>>();
  for (const line of (await readFile(`${dir}qrels-train.tsv`, 'utf8')).trim().split('\n').slice(1)) {
    const [q, doc, score] = line.split('\t');
    if (!q || !doc) continue;
    const m = qrels.get(q) ?? new Map<string, number>();
    m.set(doc, Number(score));
    qrels.set(q, m);
  }
  const queries = (await readFile(`${dir}queries-train.jsonl`, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { _id: string; text: string })
    .filter((q) => qrels.has(q._id))
    .slice(0, LIMIT)
    .map((q) => ({ id: q._id, text: q.text }));

  const work = await mkdtemp(join(tmpdir(), 'kilde-bench-quality-'));
  try {
    // One plain-text file per abstract: title line, blank line, abstract.
    const files = join(work, 'files');
    await mkdir(files);
    const names: string[] = [];
    for (const line of (await readFile(`${dir}corpus.jsonl`, 'utf8')).trim().split('\n')) {
      const d = JSON.parse(line) as { _id: string; title: string; text: string };
      await writeFile(join(files, `${d._id}.txt`), `${d.title}\n\n${d.text}\n`);
      names.push(`${d._id}.txt`);
    }
    const dataDir = join(work, 'kilde');
    const backend = createLocalBackend(envFor(dataDir, 'english'), log);
    const t0 = performance.now();
    const chunks = await ingestAll(backend, files, names, 'scifact');
    const ingestS = (performance.now() - t0) / 1000;
    const asIngested = await evalScifact(viaBackend(backend), queries, qrels);
    await backend.close();
    await settle(dataDir);
    const settledBackend = createLocalBackend(envFor(dataDir, 'english'), log);
    const settled = await evalScifact(viaBackend(settledBackend), queries, qrels);
    await settledBackend.close();
    const client = await clientBm25(dataDir, 'english');
    const clientScores = await evalScifact(client.search, queries, qrels);
    await client.close();

    console.log(
      `\nSciFact (BEIR), train split: ${names.length} abstracts → ${chunks} chunks (ingested in ${ingestS.toFixed(0)} s), ${queries.length} queries, k=10 chunks`,
    );
    const fmt = (s: Awaited<ReturnType<typeof evalScifact>>) => [
      s.ndcg.toFixed(3),
      s.recall.toFixed(3),
      s.mrr.toFixed(3),
      s.docs.toFixed(1),
    ];
    printTable(
      ['search', 'nDCG@10', 'Recall@10', 'MRR@10', 'docs in top 10'],
      [
        ['lexical: LanceDB full-text, right after ingest', ...fmt(asIngested)],
        ['lexical: LanceDB full-text, index optimized', ...fmt(settled)],
        ['client-side BM25 (Qdrant/bm25 encoder)', ...fmt(clientScores)],
        ['published BM25 (BEIR, test split, one doc per hit)', '0.665', '', '', '10'],
      ],
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// ----------------------------------------------------------------------------------------- Danish

interface Question {
  text: string;
  section: string;
}

async function evalDanish(search: Search, questions: readonly Question[], target: (q: Question) => string) {
  const hits = { top1: 0, top5: 0, near1: 0, near5: 0 };
  for (const q of questions) {
    const metas = await search(q.text, 5);
    if (breadcrumbHas(metas[0], q.section)) hits.top1 += 1;
    if (metas.some((m) => breadcrumbHas(m, q.section))) hits.top5 += 1;
    if (breadcrumbHas(metas[0], target(q))) hits.near1 += 1;
    if (metas.some((m) => breadcrumbHas(m, target(q)))) hits.near5 += 1;
  }
  const n = questions.length;
  return [hits.top1 / n, hits.top5 / n, hits.near1 / n, hits.near5 / n].map(
    (x) => `${(x * 100).toFixed(1)} %`,
  );
}

async function danish(): Promise<void> {
  const dir = `${benchData('da-citizenship')}/`;
  const questions = (await readFile(`${dir}questions-dev.jsonl`, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Question)
    .slice(0, LIMIT);
  const corpus = `${dir}corpus/`;
  const names = (await readdir(corpus)).filter((f) => f.endsWith('.md')).sort();
  // Some labelled sections (in chapters 5 and 6) have no numbered heading in the textbook, so no
  // breadcrumb can name them: the second pair of columns scores those against the nearest
  // numbered ancestor heading instead, which tells ranking misses from unreachable labels.
  const headings = new Set<string>();
  for (const name of names) {
    for (const line of (await readFile(join(corpus, name), 'utf8')).split('\n')) {
      const section = line.startsWith('#') ? sectionOf(line.replace(/^#+/, '')) : undefined;
      if (section) headings.add(section);
    }
  }
  const nearest = (q: Question) => {
    let s = q.section;
    while (!headings.has(s) && s.includes('.')) s = s.slice(0, s.lastIndexOf('.'));
    return s;
  };
  const unreachable = questions.filter((q) => !headings.has(q.section)).length;

  const rows: string[][] = [];
  let chunks = 0;
  for (const language of ['english', 'danish'] as const) {
    const work = await mkdtemp(join(tmpdir(), 'kilde-bench-quality-da-'));
    try {
      const backend = createLocalBackend(envFor(work, language), log);
      chunks = await ingestAll(backend, corpus, names, `danish/${language}`);
      await backend.close();
      await settle(work);
      const settled = createLocalBackend(envFor(work, language), log);
      rows.push([
        `lexical: LanceDB full-text, SPARSE_LANGUAGE=${language}`,
        ...(await evalDanish(viaBackend(settled), questions, nearest)),
      ]);
      await settled.close();
      const client = await clientBm25(work, language);
      rows.push([
        `client-side BM25, SPARSE_LANGUAGE=${language}`,
        ...(await evalDanish(client.search, questions, nearest)),
      ]);
      await client.close();
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  console.log(
    `\nDanish citizenship textbook: ${names.length} chapters → ${chunks} markdown chunks, ${questions.length} questions; a hit = the breadcrumb names the labelled section`,
  );
  printTable(['search', 'top-1', 'top-5', 'top-1 (nearest)', 'top-5 (nearest)'], rows);
  console.log(
    `(nearest: ${unreachable} of ${questions.length} labels name a section without a numbered heading; those count their nearest numbered ancestor)`,
  );
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

if (args.only !== 'danish') await scifact();
if (args.only !== 'scifact') await danish();
