/**
 * Peak memory of one large text file through the ingest path `kilde ingest` runs (buildIngestPipeline
 * with the local lexical-only defaults, LanceDB in a temp dir), in a process of its own so that
 * nothing else counts: prints the RSS after start-up, the peak while ingesting (this process and its
 * worker processes sampled every 5 ms, and getrusage's maximum of this one) and both as multiples of the
 * file. `bench:ingest` runs it; alone:
 *   npx tsx bench/ingest-large.ts <file> [INGEST_BATCH_CHUNKS]
 * Prints figures; asserts nothing.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ingestSchema } from '../src/config/ingest.js';
import { parseConfig } from '../src/config/parse.js';
import { buildIngestPipeline } from '../src/ingest/build.js';
import { treeRss } from './lib/tree-rss.js';

const path = process.argv[2];
if (!path) {
  process.stderr.write('usage: tsx bench/ingest-large.ts <file> [INGEST_BATCH_CHUNKS]\n');
  process.exit(2);
}
const bytes = (await stat(path)).size;
const work = await mkdtemp(join(tmpdir(), 'kilde-bench-large-'));
const config = parseConfig(ingestSchema, {
  KILDE_DATA_DIR: work,
  EMBEDDING_PROVIDER: 'none',
  API_KEY: 'bench-key-not-served-anywhere',
  MAX_UPLOAD_BYTES: String(bytes + 1),
  EXTRACTION_MAX_TEXT_CHARS: String(bytes + 1),
  ...(process.argv[3] ? { INGEST_BATCH_CHUNKS: process.argv[3] } : {}),
});
const built = await buildIngestPipeline(config, { log: pino({ level: 'warn' }) });
const mib = (n: number) => (n / 1024 / 1024).toFixed(0);
const baseline = treeRss();
let peak = baseline;
const sampler = setInterval(() => {
  peak = Math.max(peak, treeRss());
}, 5);
try {
  const t0 = performance.now();
  const out = await built.service.ingest(
    {
      fileId: 'large',
      filename: 'large.txt',
      collectionName: 'large',
      collectionType: 'file',
      userId: 'bench',
      overwrite: true,
      source: 'large.txt',
    },
    async () => ({ path, filename: 'large.txt', bytes }),
  );
  const s = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const maxRss = process.resourceUsage().maxRSS * 1024;
  console.log(
    `large text ${mib(bytes)} MiB: ${out.chunksCount} chunks in ${s.toFixed(1)} s; RSS after start-up ${mib(baseline)} MiB, ` +
      `peak ${mib(Math.max(peak, maxRss))} MiB = ${(Math.max(peak, maxRss) / bytes).toFixed(1)}× the file ` +
      `(${((Math.max(peak, maxRss) - baseline) / bytes).toFixed(1)}× above start-up)`,
  );
} finally {
  clearInterval(sampler);
  await built.close();
  await rm(work, { recursive: true, force: true });
}
