import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Backend, SearchResult } from '../src/cli/backend.js';
import { createLocalBackend } from '../src/cli/local-backend.js';
import { LexicalAnalyzer } from '../src/embed/bm25/analysis.js';
import {
  documentText,
  type EvalQuery,
  parseQrels,
  parseQueries,
  type QrelsMap,
  readCorpus,
} from '../src/eval/beir.js';
import { evaluate } from '../src/eval/evaluate.js';
import { METRICS, type MetricValues } from '../src/eval/metrics.js';
import type { EvalRun } from '../src/eval/run.js';
import type { ChunkMeta } from '../src/index/contract.js';
import { fileIdFor } from '../src/index/identifiers.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import { createCorpusCache } from '../src/retrieve/corpus-cache.js';
import { createRetrieveMetrics } from '../src/retrieve/metrics.js';
import { createQueryLexical } from '../src/retrieve/query-lexical.js';
import { createSearchService } from '../src/retrieve/search-service.js';
import { kildeVersion } from '../src/version.js';
import { benchData } from './lib/data.js';
import { textbookPdfs } from './lib/textbook-pdf.js';
import { danishSet, evalDanish, type Question } from './quality-danish.js';
import type { AuditEntry } from './quality-metrics.js';

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
 *   --runs DIR          also write each SciFact search's evaluation run there (`kilde eval compare` reads them)
 *   --misses            print each Danish question the offline default misses in its top five, with
 *                       the label and the sections it found (what to look at before changing the analysis)
 *   --pdf               also the Danish textbook as PDFs (LibreOffice prints each chapter; needs
 *                       `soffice`), read once by each `EXTRACTION_PDF_READER`: PDFium and pdf.js
 *   --model DIR         also with a real dense model: each set ingested again with the in-process
 *                       provider over DIR (an ONNX export, `.tmp/models/all-MiniLM-L6-v2` after
 *                       `npm run test:models-live`) and searched dense-only and hybrid (RRF); with
 *                       --rerank-url/--rerank-model, hybrid + rerank too (a Cohere/Jina/TEI endpoint)
 *   --model-url URL     the model behind an OpenAI-style `/embeddings` endpoint instead (EMBEDDING_PROVIDER
 *                       =http-compat at URL, e.g. http://127.0.0.1:8781/v1); --model is then the name sent
 *   --model-name NAME   the model's name in the tables (default: DIR's last part)
 *   --model-dim 384 --model-max-tokens 256 --prefix-doc '' --prefix-query ''   the model's settings
 *                       (defaults: all-MiniLM-L6-v2's; an e5 model wants 'passage: ' / 'query: ' and 512)
 *   --index-dir DIR     keep each set's ingested index in DIR/scifact, DIR/danish (a model's in
 *                       DIR/danish-model-NAME, …), and reuse it when a run with the same DIR finds it
 *                       complete (ingestion skipped: SciFact's takes minutes, a model's longer); delete
 *                       the folder after a change to extraction, chunking, analysis or the model's settings
 *   --env KEY=VALUE     a Kilde setting for every run of the bench (repeatable), e.g. --env CHUNK_SIZE=512
 *                       to measure a setting before changing its default (use its own --index-dir)
 *   --corpus-sample N   SciFact: only N abstracts, every one the queries judge relevant and the
 *                       corpus's first others (embedding all 5,183 takes hours on a loaded 2-core
 *                       machine); every row of the run is over the same sample
 */
const { values: args } = parseArgs({
  options: {
    'limit-queries': { type: 'string' },
    only: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    runs: { type: 'string' },
    misses: { type: 'boolean', default: false },
    pdf: { type: 'boolean', default: false },
    model: { type: 'string' },
    'model-url': { type: 'string' },
    'corpus-sample': { type: 'string' },
    'index-dir': { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
    'model-name': { type: 'string' },
    'model-dim': { type: 'string', default: '384' },
    'model-max-tokens': { type: 'string', default: '256' },
    'prefix-doc': { type: 'string', default: '' },
    'prefix-query': { type: 'string', default: '' },
    'rerank-url': { type: 'string' },
    'rerank-model': { type: 'string', default: '' },
  },
});
const MODEL = args.model;
const SAMPLE = args['corpus-sample'] === undefined ? Number.POSITIVE_INFINITY : Number(args['corpus-sample']);
const MODEL_NAME = args['model-name'] ?? MODEL?.split('/').filter(Boolean).at(-1) ?? '';
const MODEL_URL = args['model-url'];
/** Where the model runs, as the tables say it. */
const MODEL_WHERE = MODEL_URL ? 'http-compat' : 'in process';
const LIMIT = args['limit-queries'] === undefined ? Number.POSITIVE_INFINITY : Number(args['limit-queries']);
const CONCURRENCY = Number(args.concurrency);
const RUNS = args.runs;
const COLLECTION = 'bench';
/** `--env KEY=VALUE`: settings every backend of the run gets. */
const SETTINGS = Object.fromEntries(
  args.env.map((kv) => {
    const at = kv.indexOf('=');
    if (at <= 0) throw new Error(`--env takes KEY=VALUE, not "${kv}"`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);
const log = pino({ level: 'silent' });

type Language = 'english' | 'danish';

/** The embedded defaults of `kilde serve all`, in a throwaway data directory, nothing from the shell. */
function envFor(dataDir: string, language: Language, extra: Record<string, string> = {}) {
  return { KILDE_DATA_DIR: dataDir, SPARSE_LANGUAGE: language, ...SETTINGS, ...extra };
}

/** Ingests every file through the local backend (the ingest service: extract, chunk, BM25, write). */
async function ingestAll(
  backend: Backend,
  dir: string,
  files: readonly { name: string; id: string }[],
  label: string,
): Promise<number> {
  let next = 0;
  let chunks = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < files.length) {
        const { name, id } = files[next++]!;
        const out = await backend.ingest({
          path: join(dir, name),
          fileId: fileIdFor(COLLECTION, id),
          filename: name,
          collection: COLLECTION,
          userId: 'bench',
          source: id,
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

/**
 * The set's ingested index: reused from `--index-dir` when a run finished it there (its `ingested.json`
 * says how many chunks and how long), else ingested (and kept there with `--index-dir`, else in `work`).
 */
async function ingestedIndex(
  set: string,
  work: string,
  ingest: (dataDir: string) => Promise<number>,
): Promise<{ dataDir: string; chunks: number; seconds: number; reused: boolean }> {
  const kept = args['index-dir'];
  const dataDir = kept ? join(kept, set) : join(work, set);
  const done = join(dataDir, 'ingested.json');
  if (kept && existsSync(done)) {
    const { chunks, seconds } = JSON.parse(await readFile(done, 'utf8')) as {
      chunks: number;
      seconds: number;
    };
    return { dataDir, chunks, seconds, reused: true };
  }
  await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const t0 = performance.now();
  const chunks = await ingest(dataDir);
  const seconds = (performance.now() - t0) / 1000;
  await settle(dataDir);
  await writeFile(done, JSON.stringify({ chunks, seconds }));
  return { dataDir, chunks, seconds, reused: false };
}

type Search = (query: string, k: number) => Promise<ChunkMeta[]>;

/** `pipeline` toggles (`POST /search`'s Kilde extension): dense-only, hybrid, rerank, per search. */
type Toggles = { hybrid?: boolean; rerank?: boolean };

const viaBackend =
  (backend: Backend, pipeline?: Toggles): Search =>
  async (query, k) => {
    const body = { queries: [query], collection_names: [COLLECTION], k, ...(pipeline ? { pipeline } : {}) };
    const r: SearchResult = await backend.search(body);
    return r.metadatas[0] ?? [];
  };

/**
 * The settings of the real-model runs (`--model`): the in-process provider over the ONNX export, or
 * an OpenAI-style endpoint (`--model-url`); hybrid configured (so a search can ask for dense-only or
 * hybrid), reranking when an endpoint is given.
 */
function modelEnv(): Record<string, string> {
  if (!MODEL) return {};
  const provider = MODEL_URL
    ? {
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_API_BASE_URL: MODEL_URL,
        // A CPU server on a loaded machine answers a batch in minutes, one request at a time.
        EMBEDDING_BATCH_SIZE: '8',
        EMBEDDING_TIMEOUT: '1800',
      }
    : { EMBEDDING_PROVIDER: 'inprocess', EMBEDDING_OFFLINE: 'true' };
  return {
    ...provider,
    EMBEDDING_MODEL: MODEL,
    EMBEDDING_DIM: args['model-dim'],
    // all-MiniLM-L6-v2 and the like take no e5-style prefixes, and read at most 256 tokens.
    EMBEDDING_PREFIX_DOC: args['prefix-doc'],
    EMBEDDING_PREFIX_QUERY: args['prefix-query'],
    EMBEDDING_MAX_TOKENS: args['model-max-tokens'],
    ENABLE_HYBRID_SEARCH: 'true',
    ...(args['rerank-url']
      ? {
          RERANK_API_BASE_URL: args['rerank-url'],
          RERANK_MODEL: args['rerank-model'],
          ENABLE_RERANKING: 'true',
          RERANK_TIMEOUT: '120',
        }
      : {}),
  };
}

/** The searches of a real-model run: dense-only, hybrid, and hybrid + rerank when configured. */
function modelSearches(backend: Backend): [string, Search][] {
  const rows: [string, Search][] = [
    [`dense (${MODEL_NAME}, ${MODEL_WHERE})`, viaBackend(backend, { hybrid: false, rerank: false })],
    [`hybrid: full-text + ${MODEL_NAME}, RRF`, viaBackend(backend, { hybrid: true, rerank: false })],
  ];
  if (args['rerank-url']) {
    rows.push([
      `hybrid + rerank (${args['rerank-model'] || 'endpoint'})`,
      viaBackend(backend, { hybrid: true, rerank: true }),
    ]);
  }
  return rows;
}

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
  const analyzer = new LexicalAnalyzer(language);
  // Described as having no lexical side, as a Qdrant collection without text-sparse is.
  const collection = { current: async () => ({ exists: true, hasSparse: false, vectorNames: [] }) };
  const service = createSearchService({
    pipeline: {
      index,
      lexical: createQueryLexical({ index, analyzer, collection, refreshMs: 3_600_000 }),
      hybrid: false,
      multiplier: 3,
      corpus: createCorpusCache({ index, analyzer, maxDocs: 1_000_000, ttlMs: 3_600_000 }),
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
  const search: Search = async (query, k) =>
    (await service.search({ queries: [query], collection_names: [COLLECTION], k })).metadatas[0] ?? [];
  return { search, close: () => index.close() };
}

// ---------------------------------------------------------------------------------------- SciFact

/**
 * Figures of the offline default before issue 17 (main at 7db2f67), measured by this bench, printed
 * beside today's. `chunks10` is the measure this bench always reported (the documents among the
 * first 10 chunks); the others are `kilde eval`'s (documents pooled from 100 chunks).
 */
const BEFORE = {
  scifact: {
    lexical: { chunks10: 0.686, 'ndcg@10': 0.688, 'recall@10': 0.795, 'recall@100': 0.914, 'mrr@10': 0.661 },
    client: { chunks10: 0.696, 'ndcg@10': 0.699, 'recall@10': 0.806, 'recall@100': 0.915, 'mrr@10': 0.672 },
  },
  danish: {
    lexical: [0.472, 0.606, 0.628, 0.778],
    client: [0.461, 0.6, 0.6, 0.772],
  },
} as const;

type Scores = { chunks10: number } & MetricValues;

/** The eval module's measures, through the given search: once over 10 chunks, once pooled from 100. */
async function evalScifact(label: string, search: Search, queries: EvalQuery[], qrels: QrelsMap) {
  const through = (query: string, _c: readonly string[], k: number) => search(query, k);
  const base = { search: through, queries, qrels, collectionNames: [COLLECTION] };
  const ten = await evaluate({ ...base, k: 10 });
  const pooled = await evaluate({ ...base, k: 100 });
  if (RUNS) {
    await mkdir(RUNS, { recursive: true });
    const run: EvalRun = {
      id: `scifact-${label}`,
      name: `bench:quality scifact ${label}`,
      created_at: new Date().toISOString(),
      kilde_version: kildeVersion(),
      settings: { bench: 'scifact', search: label },
      ...pooled,
    };
    await writeFile(join(RUNS, `${run.id}.json`), `${JSON.stringify(run, null, 2)}\n`);
  }
  return { chunks10: ten.metrics['ndcg@10'], ...pooled.metrics } satisfies Scores;
}

async function scifact(): Promise<void> {
  const dir = `${benchData('scifact')}/`;
  const qrels = parseQrels(await readFile(`${dir}qrels-train.tsv`, 'utf8'));
  const queries = parseQueries(await readFile(`${dir}queries-train.jsonl`, 'utf8'))
    .filter((q) => qrels.has(q.id))
    .slice(0, LIMIT);

  const work = await mkdtemp(join(tmpdir(), 'kilde-bench-quality-'));
  try {
    // One text file per abstract (title line, blank line, abstract), ingested as `kilde eval
    // --dataset` does: under the path of its BEIR id, so the qrels name it.
    const files = join(work, 'files');
    await mkdir(files);
    const docs: { name: string; id: string }[] = [];
    // --corpus-sample N: every abstract the queries judge relevant, then the corpus's first others up to N.
    const judged = new Set(queries.flatMap((q) => [...(qrels.get(q.id)?.keys() ?? [])]));
    let others = SAMPLE - judged.size;
    for await (const d of readCorpus(`${dir}corpus.jsonl`)) {
      if (!judged.has(d.id) && others-- <= 0) continue;
      await writeFile(join(files, `${d.id}.txt`), documentText(d));
      docs.push({ name: `${d.id}.txt`, id: d.id });
    }
    const built = await ingestedIndex(
      SAMPLE < Number.POSITIVE_INFINITY ? `scifact-${SAMPLE}` : 'scifact',
      work,
      async (dataDir) => {
        const backend = createLocalBackend(envFor(dataDir, 'english'), log);
        const n = await ingestAll(backend, files, docs, 'scifact');
        await backend.close();
        return n;
      },
    );
    const { dataDir, chunks } = built;
    const ingestS = built.seconds;
    const settledBackend = createLocalBackend(envFor(dataDir, 'english'), log);
    const lexical = await evalScifact('lexical', viaBackend(settledBackend), queries, qrels);
    await settledBackend.close();
    const client = await clientBm25(dataDir, 'english');
    const clientScores = await evalScifact('client-bm25', client.search, queries, qrels);
    await client.close();

    console.log(
      `\nSciFact (BEIR), train split: ${docs.length} abstracts → ${chunks} chunks (${built.reused ? 'index reused from --index-dir, ingested' : 'ingested'} in ${ingestS.toFixed(0)} s), ${queries.length} queries` +
        `\n  nDCG@10 (10 chunks): documents among the first 10 chunks, this bench's measure since issue 7;` +
        `\n  the others as \`kilde eval\` measures: documents pooled from the first 100 chunks. Cells: before → now.`,
    );
    const cell = (before: number, now: number) =>
      `${before.toFixed(3)} → ${now.toFixed(3)} (${now >= before ? '+' : ''}${(now - before).toFixed(3)})`;
    const row = (name: string, before: Scores, now: Scores) => [
      name,
      cell(before.chunks10, now.chunks10),
      ...METRICS.map((m) => cell(before[m], now[m])),
    ];
    printTable(
      ['search', 'nDCG@10 (10 chunks)', 'nDCG@10', 'Recall@10', 'Recall@100', 'MRR@10'],
      [
        row('lexical: LanceDB full-text (the offline default)', BEFORE.scifact.lexical, lexical),
        row('client-side BM25 (Qdrant without text-sparse)', BEFORE.scifact.client, clientScores),
        ['published BM25 (BEIR, test split, one doc per hit)', '', '0.665', '', '', ''],
      ],
    );
    if (MODEL) {
      const sample = SAMPLE < Number.POSITIVE_INFINITY ? `-${SAMPLE}` : '';
      const built = await ingestedIndex(`scifact${sample}-model-${MODEL_NAME}`, work, async (dir) => {
        const ingesting = createLocalBackend(envFor(dir, 'english', modelEnv()), log);
        const n = await ingestAll(ingesting, files, docs, 'scifact (model)');
        await ingesting.close();
        return n;
      });
      const { chunks: modelChunks, seconds: modelS } = built;
      const env = envFor(built.dataDir, 'english', modelEnv());
      const backend = createLocalBackend(env, log);
      const rows: string[][] = [
        ['lexical (the offline default, above)', ...METRICS.map((m) => lexical[m].toFixed(3))],
      ];
      for (const [name, search] of modelSearches(backend)) {
        const scores = await evalScifact(name.split(' ')[0]!, search, queries, qrels);
        rows.push([name, ...METRICS.map((m) => scores[m].toFixed(3))]);
      }
      await backend.close();
      console.log(
        `\nSciFact with a real model: ${MODEL_NAME} (${MODEL}, ${MODEL_WHERE}), ${modelChunks} chunks, ingested with embedding in ${modelS.toFixed(0)} s${built.reused ? ' (index reused)' : ''}; documents pooled from 100 chunks`,
      );
      printTable(['search', 'nDCG@10', 'Recall@10', 'Recall@100', 'MRR@10'], rows);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// ----------------------------------------------------------------------------------------- Danish

async function danish(): Promise<void> {
  const { questions, corpus, names, audit, problems, nearest, unreachable } = await danishSet(LIMIT);

  // The embedded defaults (SPARSE_LANGUAGE=english): the chapters are detected as Danish and
  // analysed so, whatever the default.
  const work = await mkdtemp(join(tmpdir(), 'kilde-bench-quality-da-'));
  try {
    const { dataDir, chunks } = await ingestedIndex('danish', work, async (dir) => {
      const backend = createLocalBackend(envFor(dir, 'english'), log);
      const n = await ingestAll(
        backend,
        corpus,
        names.map((name) => ({ name, id: name })),
        'danish',
      );
      await backend.close();
      return n;
    });
    const settled = createLocalBackend(envFor(dataDir, 'english'), log);
    const lexical = await evalDanish(viaBackend(settled), questions, nearest, audit, args.misses);
    await settled.close();
    const client = await clientBm25(dataDir, 'english');
    const clientScores = await evalDanish(client.search, questions, nearest, audit);
    await client.close();
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const row = (name: string, before: readonly number[], now: number[]) => [
      name,
      ...now.map((x, i) => `${pct(before[i]!)} → ${pct(x)}`),
    ];
    console.log(
      `\nDanish citizenship textbook: ${names.length} chapters → ${chunks} markdown chunks, ${questions.length} questions; a hit = the breadcrumb names the labelled section. Cells: before → now.`,
    );
    printTable(
      ['search', 'top-1', 'top-5', 'top-1 (nearest)', 'top-5 (nearest)'],
      [
        row('lexical: LanceDB full-text (the offline default)', BEFORE.danish.lexical, lexical.scores),
        row('client-side BM25 (Qdrant without text-sparse)', BEFORE.danish.client, clientScores.scores),
      ],
    );
    console.log(
      `(nearest: ${unreachable} of ${questions.length} labels name a section without a numbered heading; those count their nearest numbered ancestor)`,
    );
    const kinds = (k: AuditEntry['kind']) => [...audit.values()].filter((e) => e.kind === k).length;
    console.log(
      `\nAudited labels (bench/da-citizenship-audit.ts; nearest as above, and ${audit.size} entries checked against the textbook:` +
        `\n  ${kinds('elsewhere')} answered in another section than labelled, scored there; ${kinds('also')} answered in another section too, either counts;` +
        `\n  ${kinds('absent')} ask what the textbook does not say, scored against their label as before).` +
        `\n  An upper bound: hits whose first result lies in the labelled section were not audited.`,
    );
    printTable(
      [
        'search',
        'top-1 (audited)',
        'top-5 (audited)',
        `top-1 (${lexical.answerableN} answerable)`,
        `top-5 (${lexical.answerableN} answerable)`,
      ],
      [
        [
          'lexical: LanceDB full-text (the offline default)',
          ...lexical.audited.map(pct),
          ...lexical.answerable.map(pct),
        ],
        [
          'client-side BM25 (Qdrant without text-sparse)',
          ...clientScores.audited.map(pct),
          ...clientScores.answerable.map(pct),
        ],
      ],
    );
    for (const p of problems) console.log(`audit entry no longer holds, not used: ${p}`);
    if (MODEL) {
      const built = await ingestedIndex(`danish-model-${MODEL_NAME}`, work, async (dir) => {
        const ingesting = createLocalBackend(envFor(dir, 'english', modelEnv()), log);
        const files = names.map((name) => ({ name, id: name }));
        const n = await ingestAll(ingesting, corpus, files, 'danish (model)');
        await ingesting.close();
        return n;
      });
      const { chunks: modelChunks, seconds: modelS } = built;
      const env = envFor(built.dataDir, 'english', modelEnv());
      const backend = createLocalBackend(env, log);
      const cells = (r: Awaited<ReturnType<typeof evalDanish>>) => [
        ...r.audited.map(pct),
        ...r.answerable.map(pct),
        pct(r.scores[0]!),
        pct(r.scores[1]!),
      ];
      const rows: string[][] = [['lexical (the offline default, above)', ...cells(lexical)]];
      for (const [name, search] of modelSearches(backend)) {
        rows.push([name, ...cells(await evalDanish(search, questions, nearest, audit))]);
      }
      await backend.close();
      console.log(
        `\nDanish textbook with a real model: ${MODEL_NAME} (${MODEL}, ${MODEL_WHERE}), ${modelChunks} chunks, ingested with embedding in ${modelS.toFixed(0)} s${built.reused ? ' (index reused)' : ''}`,
      );
      printTable(
        [
          'search',
          'top-1 (audited)',
          'top-5 (audited)',
          `top-1 (${lexical.answerableN} answerable)`,
          `top-5 (${lexical.answerableN} answerable)`,
          'top-1 (labels)',
          'top-5 (labels)',
        ],
        rows,
      );
    }
    if (args.pdf) await danishPdf(corpus, names, questions, nearest, audit, lexical.scores);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The same questions over the textbook as PDFs (`--pdf`): LibreOffice prints each chapter (headings
 * in larger type and in the outline, fonts embedded), and each PDF reader reads them; the
 * breadcrumbs then come from the headings the reader finds.
 */
async function danishPdf(
  corpus: string,
  names: readonly string[],
  questions: readonly Question[],
  nearest: (q: Question) => string,
  audit: ReadonlyMap<string, AuditEntry>,
  markdown: number[],
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-quality-pdf-'));
  try {
    const pdfs = await textbookPdfs(corpus, names, dir);
    if (!pdfs) {
      console.log('\n--pdf: LibreOffice (soffice) is not installed; the PDF rows are left out.');
      return;
    }
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const rows: string[][] = [['the Markdown chapters (above)', '–', '', ...markdown.map(pct)]];
    for (const reader of ['pdfium', 'pdfjs']) {
      const work = await mkdtemp(join(tmpdir(), `kilde-bench-quality-${reader}-`));
      try {
        const env = envFor(work, 'english', { EXTRACTION_PDF_READER: reader });
        const backend = createLocalBackend(env, log);
        const started = performance.now();
        const chunks = await ingestAll(
          backend,
          dir,
          pdfs.map((name) => ({ name, id: name.replace(/\.pdf$/, '.md') })),
          `danish-pdf-${reader}`,
        );
        const seconds = (performance.now() - started) / 1000;
        await backend.close();
        await settle(work);
        const settled = createLocalBackend(env, log);
        const scores = (await evalDanish(viaBackend(settled), questions, nearest, audit)).scores;
        await settled.close();
        rows.push([
          `PDF, EXTRACTION_PDF_READER=${reader}`,
          `${seconds.toFixed(1)} s`,
          String(chunks),
          ...scores.map(pct),
        ]);
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    }
    console.log(
      `\nThe textbook as ${pdfs.length} PDFs printed by LibreOffice, lexical search (the offline default):`,
    );
    printTable(
      ['read from', 'ingest', 'chunks', 'top-1', 'top-5', 'top-1 (nearest)', 'top-5 (nearest)'],
      rows,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

if (args.env.length > 0) console.log(`settings (--env): ${args.env.join(' ')}`);
if (args.only !== 'danish') await scifact();
if (args.only !== 'scifact') await danish();
