/**
 * Ingestion throughput: documents/s, chunks/s and peak RSS through the real pipeline (inprocess
 * extraction, token chunking with the all-MiniLM-L6-v2 tokenizer, BM25, LanceDB in a temp dir) with
 * a zero-cost dense embedder, so the figures measure Kilde rather than an embedding model.
 * Sets: the docling fixtures, the Danish textbook, and one large generated PDF.
 * Last, one large text file (SciFact abstracts repeated, 100 MiB by default) goes through the CLI's
 * ingest path, a multipart upload and an S3 object, each in a fresh process (bench/ingest-large.ts),
 * for its peak RSS.
 * Prints figures; asserts nothing.
 * Usage: npm run bench:ingest [-- <pages of the generated PDF> [<MiB of the large text file, 0: skip>]]
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createChunker } from '../src/chunk/create-chunker.js';
import { loadTokenCounter } from '../src/chunk/tokenizer.js';
import { withMallocTunables, withYoungGenerationFlag } from '../src/cli/process-memory.js';
import { extractionSchema } from '../src/config/extraction.js';
import { parseConfig } from '../src/config/parse.js';
import { createLexicalStage } from '../src/embed/bm25/lexical-stage.js';
import { createExtractor } from '../src/extract/create-extractor.js';
import { openIndex } from '../src/index/open.js';
import { IngestService } from '../src/ingest/service.js';
import type { Stage } from '../src/ingest/stages.js';
import { benchData, FIXTURE_DOCUMENTS, FIXTURE_TOKENIZER } from './lib/data.js';
import { treeRss } from './lib/tree-rss.js';
import { zeroCostEmbedder } from './lib/zero-cost.js';
import { writeTextPdf } from './text-pdf.js';

const PDF_PAGES = Number(process.argv[2] ?? 300);
const TEXT_MIB = Number(process.argv[3] ?? 100);
const DIM = 384;
const log = pino({ level: 'warn' });

const embedder = zeroCostEmbedder(DIM);

let peakSampled = 0;
const sampler = setInterval(() => {
  peakSampled = Math.max(peakSampled, treeRss());
}, 10);
sampler.unref();

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-ingest-'));
const counter = await loadTokenCounter(FIXTURE_TOKENIZER);
const stageTotals = new Map<Stage, number>();
const index = await openIndex(
  { uri: join(work, 'lancedb'), collection: 'bench', denseDim: DIM, sparse: true, timeoutMs: 30_000 },
  { log },
);
await index.ensureCollection();
const service = new IngestService({
  extractor: createExtractor('inprocess', parseConfig(extractionSchema, {}), { log }),
  chunker: createChunker({ mode: 'token', size: 400, overlap: 80, prefixTokens: 3, maxTokens: 512 }, counter),
  dense: embedder,
  lexical: createLexicalStage({ sparseModel: 'Qdrant/bm25' }),
  fallbackLanguage: 'english',
  index,
  log,
  observer: { stage: (s, sec) => stageTotals.set(s, (stageTotals.get(s) ?? 0) + sec) },
});

async function run(label: string, files: string[]) {
  stageTotals.clear();
  peakSampled = treeRss();
  let bytes = 0;
  let chunks = 0;
  const t0 = performance.now();
  for (const [i, path] of files.entries()) {
    const size = (await stat(path)).size;
    bytes += size;
    const filename = path.split('/').at(-1)!;
    const out = await service.ingest(
      {
        fileId: `${label}-${i}`,
        filename,
        collectionName: label,
        collectionType: 'file',
        userId: 'bench',
        overwrite: true,
        source: filename,
      },
      async () => ({ path, filename, bytes: size }),
    );
    chunks += out.chunksCount;
  }
  const s = (performance.now() - t0) / 1000;
  const stages = [...stageTotals].map(([k, v]) => `${k} ${((v / s) * 100).toFixed(0)}%`).join(', ');
  console.log(
    `${label.padEnd(10)} ${String(files.length).padStart(3)} docs ${(bytes / 1024 / 1024).toFixed(1).padStart(5)} MiB ` +
      `${chunks} chunks in ${s.toFixed(2)} s: ${(files.length / s).toFixed(1)} docs/s, ${(chunks / s).toFixed(0)} chunks/s, ` +
      `peak RSS ${(peakSampled / 1024 / 1024).toFixed(0)} MiB (stages: ${stages})`,
  );
}

try {
  const fixtures = FIXTURE_DOCUMENTS;
  const fixtureFiles = (await readdir(fixtures))
    .filter((f) => /\.(pdf|docx|pptx|xlsx|html)$/.test(f))
    .map((f) => join(fixtures, f));
  const danish = benchData('da-citizenship', 'corpus');
  const danishFiles = (await readdir(danish)).filter((f) => f.endsWith('.md')).map((f) => join(danish, f));
  const bigPdf = join(work, 'generated.pdf');
  await writeFile(bigPdf, writeTextPdf(PDF_PAGES, 45));

  // one warm-up pass so module loading and JIT do not count against the first set
  await run('warm-up', fixtureFiles.slice(0, 3));
  console.log('---');
  await run('fixtures', fixtureFiles);
  await run('danish', danishFiles);
  await run(`pdf-${PDF_PAGES}p`, [bigPdf]);
  console.log(`process max RSS (getrusage): ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
  if (TEXT_MIB > 0) {
    const big = join(work, 'large.txt');
    writeLargeText(big, TEXT_MIB * 1024 * 1024);
    const child = fileURLToPath(new URL('./ingest-large.ts', import.meta.url));
    // The three ways a file comes in, each in a fresh process: the CLI, a multipart upload, S3;
    // with the memory settings the `kilde` launcher, the Docker image and `npm start` set
    // (src/cli/process-memory.ts), then the CLI path once more without the young generation's cap
    // and once more with neither, to show what each is worth.
    const tuned = {
      ...process.env,
      GLIBC_TUNABLES: withMallocTunables(process.env.GLIBC_TUNABLES),
      NODE_OPTIONS: withYoungGenerationFlag(process.env.NODE_OPTIONS),
    };
    const v8Default = { ...tuned, NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' };
    const untuned: NodeJS.ProcessEnv = { ...v8Default };
    delete untuned.GLIBC_TUNABLES;
    for (const [via, env] of [
      ['cli', tuned],
      ['multipart', tuned],
      ['s3', tuned],
      ['cli', v8Default],
      ['cli', untuned],
    ] as const) {
      process.stdout.write(
        execFileSync(process.execPath, ['--import', 'tsx', child, big, '--via', via], {
          encoding: 'utf8',
          env,
        }),
      );
    }
  }
} finally {
  await index.close();
  await counter.close?.();
  await rm(work, { recursive: true, force: true });
}

/** SciFact abstracts (title, blank line, text), repeated until the file has `bytes` bytes. */
function writeLargeText(path: string, bytes: number): void {
  const abstracts = readFileSync(benchData('scifact', 'corpus.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const row = JSON.parse(l) as { title: string; text: string };
      return `${row.title}\n\n${row.text}\n\n`;
    });
  const fd = openSync(path, 'w');
  try {
    let written = 0;
    for (let i = 0; written < bytes; i++) written += writeSync(fd, abstracts[i % abstracts.length]!);
  } finally {
    closeSync(fd);
  }
}
