/**
 * Kilde's side of `npm run bench:vs-langchain`, one set per process:
 *   tsx bench/vs-langchain-kilde.ts <files.json> <work dir> <chunk tokens> <overlap tokens> [<index URI> <collection>]
 * The service path `kilde ingest` runs (buildIngestPipeline: worker pool, group commit), in the CLI's
 * passes (src/cli/passes.ts: up to 128 files or 1 MiB per `IngestService.ingestMany`, two in flight), with a zero-cost dense embedder (one fixed unit vector per text, as on
 * LangChain's side) into a LanceDB table with a 384-dimension dense column. Prints one JSON line,
 * with the CPU seconds of the whole run (`cpu`: the process from its start and its workers) and of
 * this process alone (`cpuMain`) and of this process up to its first file (`cpuReady`), and the peak RSS of the whole (`peakRss`), of this process
 * (`peakMain`) and of the largest worker (`peakWorker`), and the LanceDB table versions the run made
 * (`versions`). An index URI starting `http` writes into that Qdrant instead (`npm run bench:vs-platforms`;
 * `versions` is then 0), with its sparse `text-sparse` vectors as the reference layout has them.
 * KILDE_BENCH_SERVER=1 starts the kept worker before the first file, as `kilde serve` does.
 */
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { createPooledChunker } from '../src/chunk/pooled-chunker.js';
import { DEFAULT_PASS_FILES, passesOf } from '../src/cli/passes.js';
import { ingestSchema } from '../src/config/ingest.js';
import { parseConfig } from '../src/config/parse.js';
import { createPooledLexicalStage } from '../src/embed/bm25/lexical-stage.js';
import { openIndex } from '../src/index/open.js';
import { buildIngestPipeline } from '../src/ingest/build.js';
import { IngestService } from '../src/ingest/service.js';
import { lanceVersions } from './lib/lance-versions.js';
import { cpuMsOf } from './lib/proc-cpu.js';
import { cpuSeconds, rssOf, treeRss } from './lib/tree-rss.js';
import { zeroCostEmbedder } from './lib/zero-cost.js';

const [listPath, work, chunkTokens, overlapTokens, indexUri, collection] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined,
  string | undefined,
];
const files = JSON.parse(readFileSync(listPath, 'utf8')) as string[];
const DIM = 384;
const IN_FLIGHT = 2;
const log = pino({ level: 'warn' });

const zeroCost = zeroCostEmbedder(DIM);

// This process and the pool's workers (its only child processes): reading just their /proc status
// keeps the 5 ms sampler cheap (walking every thread's children list cost ~1 s of CPU per run).
let pool: { pids: number[] } = { pids: [] };
let peak = treeRss();
// Each process's own peak too: this one's (`peakMain`) and the largest worker's (`peakWorker`).
let peakMain = 0;
let peakWorker = 0;
const sampler = setInterval(() => {
  const main = rssOf(process.pid);
  let sum = main;
  for (const pid of pool.pids) {
    const worker = rssOf(pid);
    sum += worker;
    peakWorker = Math.max(peakWorker, worker);
  }
  peakMain = Math.max(peakMain, main);
  peak = Math.max(peak, sum);
}, 5);
const t0 = performance.now();
const config = parseConfig(ingestSchema, {
  KILDE_DATA_DIR: work,
  EMBEDDING_PROVIDER: 'none',
  API_KEY: 'bench-key-not-served-anywhere',
  CHUNK_SIZE: chunkTokens,
  CHUNK_OVERLAP: overlapTokens,
  // The PDF reader to compare (`EXTRACTION_PDF_READER=pdfjs`), else the default.
  ...(process.env.EXTRACTION_PDF_READER ? { EXTRACTION_PDF_READER: process.env.EXTRACTION_PDF_READER } : {}),
});
const lanceDir = join(work, 'lancedb');
const index = await openIndex(
  {
    uri: indexUri ?? lanceDir,
    collection: collection ?? 'bench',
    denseDim: DIM,
    sparse: true,
    timeoutMs: 60_000,
  },
  { log },
);
const built = await buildIngestPipeline(config, { log, index });
pool = built.pool;
const service = new IngestService({
  extractor: built.extractor,
  chunker: createPooledChunker(built.pool, config.CHUNK_SPLIT_BY),
  dense: zeroCost,
  lexical: createPooledLexicalStage(built.pool, { sparseModel: undefined }),
  fallbackLanguage: config.SPARSE_LANGUAGE,
  index,
  log,
  batchChunks: config.INGEST_BATCH_CHUNKS,
  segmentChars: config.INGEST_SEGMENT_CHARS,
});
// KILDE_BENCH_SERVER=1 (bench:vs-platforms): as `kilde serve` does once it listens, the kept worker is
// started and loads what every document needs before the first file, and the run is timed from there.
if (process.env.KILDE_BENCH_SERVER === '1') {
  built.pool.prewarm();
  // Until every worker has used no CPU for 300 ms (its preload done), at most 20 s.
  const until = performance.now() + 20_000;
  let last = '';
  let quietSince = performance.now();
  while (performance.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    const now = built.pool.pids.map((pid) => cpuMsOf(pid) ?? 0).join(',');
    if (now !== last) {
      last = now;
      quietSince = performance.now();
    } else if (built.pool.pids.length > 0 && performance.now() - quietSince >= 300) break;
  }
}
const ready = performance.now();
// CPU spent before the first file (Node's start, module loading, the pipeline's building), so a
// comparison with a server that is already up can leave it out (bench:vs-platforms).
// The live workers' CPU is in it too (they are counted whole once they exit).
const cpuReady = cpuSeconds() + built.pool.pids.reduce((sum, pid) => sum + (cpuMsOf(pid) ?? 0) / 1000, 0);
let chunks = 0;
let next = 0;
const passes = await passesOf(
  files.map((path, i) => ({ path, i })),
  DEFAULT_PASS_FILES,
);
const worker = async () => {
  for (let p = next++; p < passes.length; p = next++) {
    const outcomes = await service.ingestMany(
      passes[p]!.map(({ path, i }) => {
        const filename = path.split('/').at(-1)!;
        return {
          target: {
            fileId: `f${i}`,
            filename,
            collectionName: 'bench',
            collectionType: 'file' as const,
            userId: 'bench',
            overwrite: true,
            source: filename,
          },
          load: async () => ({ path, filename, bytes: (await stat(path)).size }),
        };
      }),
    );
    for (const o of outcomes) {
      if (o.status === 'rejected') throw o.reason;
      chunks += o.value.chunksCount;
    }
  }
};
await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, passes.length) }, worker));
const ingested = performance.now();
// As `kilde ingest` ends: the pending optimize (full-text index, compaction) and a due vector index
// build run before the process exits (part of a searchable index), then the index closes.
await index.settle?.();
await index.close();
const seconds = (performance.now() - t0) / 1000;
clearInterval(sampler);
peak = Math.max(peak, process.resourceUsage().maxRSS * 1024);
peakMain = Math.max(peakMain, process.resourceUsage().maxRSS * 1024);
await built.close();
// CPU of the whole run: this process (LanceDB's threads included) and the pool's workers, now exited.
const cpu = cpuSeconds();
const own = process.resourceUsage();
const cpuMain = (own.userCPUTime + own.systemCPUTime) / 1e6;
const startup = (ready - t0) / 1000;
const ingest = (ingested - ready) / 1000;
// Read after the timed run and the CPU reading (it opens the tables again).
const versions = indexUri ? 0 : (await lanceVersions(lanceDir)).versions;
process.stdout.write(
  `${JSON.stringify({ files: files.length, chunks, seconds, startup, ingest, peakRss: peak, peakMain, peakWorker, cpu, cpuMain, cpuReady, versions })}\n`,
);
