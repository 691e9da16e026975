/**
 * Many small files: files/s through the real ingest path (`buildIngestPipeline` with the local CLI's
 * lexical-only defaults, LanceDB in a temp dir), driven like `kilde ingest` (N workers pulling files).
 * Each SciFact abstract becomes one small .txt file. Prints files/s and where the time goes: the
 * pipeline stages plus the index calls (upsert, deleteWhere, count) timed around the adapter.
 * Prints figures; asserts nothing.
 * Usage: npm run bench:ingest-files [-- --files N --concurrency C --batch B --reingest]
 *   --batch B   files per `IngestService.ingestMany` pass (the local CLI's path: 128), two passes in
 *               flight; 0 (default): one `ingest` per file, C in flight (the server's path).
 *   --reingest  ingests every file a second time (the replace path: an old version exists).
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { ingestSchema } from '../src/config/ingest.js';
import { parseConfig } from '../src/config/parse.js';
import type { IndexFilter, IndexPoint } from '../src/index/contract.js';
import { openIndex } from '../src/index/open.js';
import { indexSettingsFrom } from '../src/index/settings-from-config.js';
import type { VectorIndex } from '../src/index/store.js';
import { buildIngestPipeline } from '../src/ingest/build.js';
import type { Stage } from '../src/ingest/stages.js';
import { benchData } from './lib/data.js';

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '2' },
    batch: { type: 'string', default: '0' },
    reingest: { type: 'boolean', default: false },
  },
});
const FILES = Number(values.files);
const BATCH = Number(values.batch);
const CONCURRENCY = BATCH > 0 ? 2 : Number(values.concurrency);
const log = pino({ level: 'warn' });

/** Wall time spent inside each index call (summed over concurrent calls). */
const calls = new Map<string, { n: number; s: number }>();
async function timedCall<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  try {
    return await fn();
  } finally {
    const c = calls.get(name) ?? { n: 0, s: 0 };
    c.n += 1;
    c.s += (performance.now() - t) / 1000;
    calls.set(name, c);
  }
}
type LanceUpsert = { upsert(points: readonly IndexPoint[], options?: { append?: boolean }): Promise<void> };
function timedIndex(inner: VectorIndex): VectorIndex {
  return Object.assign(Object.create(inner) as VectorIndex, {
    // The LanceDB adapter's upsert takes `{ append }` (writeVersion's first versions): passed on.
    upsert: (points: readonly IndexPoint[], options?: { append?: boolean }) =>
      timedCall('upsert', () => (inner as LanceUpsert).upsert(points, options)),
    deleteWhere: (filter: IndexFilter) => timedCall('deleteWhere', () => inner.deleteWhere(filter)),
    count: (filter: IndexFilter) => timedCall('count', () => inner.count(filter)),
  });
}

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-files-'));
const config = parseConfig(ingestSchema, {
  KILDE_DATA_DIR: work,
  EMBEDDING_PROVIDER: 'none',
  API_KEY: 'bench-key-not-served-anywhere',
});
const inner = await openIndex(indexSettingsFrom(config, config.ENABLE_SPARSE_EMBEDDINGS), { log });
const index = timedIndex(inner);
const stages = new Map<Stage, number>();
const built = await buildIngestPipeline(config, {
  log,
  index,
  observer: { stage: (s, sec) => stages.set(s, (stages.get(s) ?? 0) + sec) },
});

async function writeCorpus(dir: string, n: number): Promise<string[]> {
  const lines = (await readFile(benchData('scifact', 'corpus.jsonl'), 'utf8')).split('\n');
  const paths: string[] = [];
  for (const line of lines) {
    if (paths.length >= n || line.trim() === '') continue;
    const row = JSON.parse(line) as { _id: string; title: string; text: string };
    const path = join(dir, `${row._id}.txt`);
    await writeFile(path, `${row.title}\n\n${row.text}\n`);
    paths.push(path);
  }
  return paths;
}

async function pass(label: string, paths: string[]) {
  stages.clear();
  calls.clear();
  let next = 0;
  let chunks = 0;
  let failed = 0;
  const t0 = performance.now();
  const target = (filename: string) => ({
    fileId: `f-${filename}`,
    filename,
    collectionName: 'scifact',
    collectionType: 'file' as const,
    userId: 'bench',
    overwrite: true,
    source: filename,
  });
  const passes = Array.from({ length: Math.ceil(paths.length / Math.max(1, BATCH)) }, (_, p) =>
    paths.slice(p * BATCH, (p + 1) * BATCH),
  );
  const passWorker = async () => {
    for (let p = next++; p < passes.length; p = next++) {
      const outcomes = await built.service.ingestMany(
        passes[p]!.map((path) => {
          const filename = path.split('/').at(-1)!;
          return {
            target: target(filename),
            load: async () => ({ path, filename, bytes: (await stat(path)).size }),
          };
        }),
      );
      for (const o of outcomes) {
        if (o.status === 'fulfilled') chunks += o.value.chunksCount;
        else {
          failed += 1;
          if (failed <= 3) console.error(String(o.reason));
        }
      }
    }
  };
  const worker = async () => {
    if (BATCH > 0) return passWorker();
    for (let i = next++; i < paths.length; i = next++) {
      const path = paths[i]!;
      const filename = path.split('/').at(-1)!;
      try {
        const out = await built.service.ingest(target(filename), async () => ({
          path,
          filename,
          bytes: (await stat(path)).size,
        }));
        chunks += out.chunksCount;
      } catch (err) {
        failed += 1;
        if (failed <= 3) console.error(`${filename}: ${String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, paths.length) }, worker));
  const s = (performance.now() - t0) / 1000;
  const pct = (v: number) => `${((v / s) * 100).toFixed(0)}%`;
  const stageText = [...stages].map(([k, v]) => `${k} ${pct(v)}`).join(', ');
  const callText = [...calls]
    .map(([k, c]) => `${k} ${c.n}× ${((c.s / c.n) * 1000).toFixed(1)} ms (${pct(c.s)})`)
    .join(', ');
  console.log(
    `${label.padEnd(9)} ${paths.length} files, ${chunks} chunks in ${s.toFixed(1)} s: ` +
      `${(paths.length / s).toFixed(1)} files/s, ${((s / paths.length) * 1000).toFixed(1)} ms/file` +
      `${failed ? `, ${failed} FAILED` : ''}\n  stages (summed over ${CONCURRENCY} workers, % of wall): ${stageText}\n  index calls: ${callText}`,
  );
}

try {
  const paths = await writeCorpus(await mkdtemp(join(work, 'corpus-')), FILES);
  console.log(
    `${paths.length} SciFact abstracts as .txt files, ${BATCH > 0 ? `passes of ${BATCH} files, 2 in flight` : `concurrency ${CONCURRENCY}`}`,
  );
  await pass('ingest', paths);
  if (values.reingest) await pass('re-ingest', paths);
  console.log(`rows in the index: ${await inner.count({})}`);
} finally {
  await built.close();
  await inner.close();
  await rm(work, { recursive: true, force: true });
}
