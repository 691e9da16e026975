/**
 * Kilde's ingestion against the LangChain.js pipeline a TypeScript user would build instead: the
 * same files, chunk budgets of the same size (400 tokens, 80 overlap on Kilde's side; 1600 and 320
 * characters for RecursiveCharacterTextSplitter, about four characters a token), a zero-cost
 * embedder on both sides and LanceDB on both sides. Every variant runs in a fresh process
 * (bench/vs-langchain-kilde.ts over the built dist/, as `kilde ingest` runs it, built first;
 * bench/vs-langchain/runner.mjs), rounds interleaved (the order alternates); prints min and median seconds, the speed ratio (LangChain time / Kilde time: above 1
 * means Kilde is faster) and peak RSS, and a feature-matched LangChain.js run that also builds a full-text
 * index over its chunks (`LC_FTS=1`), as Kilde's table always has one, a per-file LangChain.js run that
 * adds each file to its table as it is loaded (`LC_PER_FILE=1`), as uploads arriving one by one are,
 * and the floors (`LC_FLOOR=1`): LangChain's loaders and splitters alone, and LanceDB alone writing
 * their chunks and a full-text index, nothing else timed, which bounds the ratio any pipeline ending in
 * a LanceDB table can reach. Asserts nothing.
 *
 * Sets: small files (SciFact abstracts as .txt), mixed real documents (the PDF and DOCX fixtures and
 * the Danish textbook's Markdown chapters), one large generated PDF.
 * The LangChain side lives in bench/vs-langchain/ with its own lockfile (its peer tree needs
 * --legacy-peer-deps, which Kilde's own install must not); it is installed there on first use.
 *
 * Usage: npm run bench:vs-langchain [-- --rounds 2 --files 1000 --pages 300 --sets small,mixed,pdf]
 * The search side is `npm run bench:vs-langchain-search` (bench/vs-langchain-search.ts). Not measured: token-budget chunking alone.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { compileCacheDir } from '../src/cli/compile-cache.js';
import { withMallocTunables, withYoungGenerationFlag } from '../src/cli/process-memory.js';
import { benchData, FIXTURE_DOCUMENTS } from './lib/data.js';
import { writeTextPdf } from './text-pdf.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2' },
    files: { type: 'string', default: '1000' },
    pages: { type: 'string', default: '300' },
    sets: { type: 'string', default: 'small,mixed,pdf' },
  },
});
const ROUNDS = Number(values.rounds);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const LC_DIR = here('./vs-langchain/');

interface Run {
  files: number;
  chunks: number;
  seconds: number;
  /** Kilde only: building the pipeline (pool, tokenizer, table and indexes), and the ingests alone. */
  startup?: number;
  ingest?: number;
  peakRss: number;
  /** CPU seconds of the run (user + system): the process from its start, Kilde's pool workers included. */
  cpu?: number;
  /** Kilde only: the peak RSS of its main process, and of its largest worker process. */
  peakMain?: number;
  peakWorker?: number;
  /** The floor only: LanceDB building a full-text index over the chunks it has just written. */
  ftsSeconds?: number;
  /** The floor only: LangChain's loaders and splitters alone, before anything is written. */
  loadSeconds?: number;
}

// Data first: without it there is nothing to compare (exit 2 naming KILDE_BENCH_DATA).
const scifact = benchData('scifact', 'corpus.jsonl');
const danish = benchData('da-citizenship', 'corpus');

if (!existsSync(join(LC_DIR, 'node_modules'))) {
  // `npm install` from the lockfile: npm 11's `npm ci` refuses it (the lockfile lists only the
  // platform binaries of LanceDB that were installed), where `install` takes the locked versions.
  console.log(
    'installing the LangChain.js side into bench/vs-langchain/ (npm install --legacy-peer-deps) ...',
  );
  execFileSync('npm', ['install', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: LC_DIR,
    stdio: 'inherit',
  });
}

// Kilde's side runs dist/: bring it up to date with src/ first.
console.log('building dist/ (tsc -b tsconfig.build.json) ...');
execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
  cwd: here('../'),
  stdio: 'inherit',
});

const work = await mkdtemp(join(tmpdir(), 'kilde-vs-langchain-'));

async function writeSets(): Promise<Array<{ key: string; name: string; files: string[] }>> {
  const small = join(work, 'small');
  await rm(small, { recursive: true, force: true });
  const { mkdir } = await import('node:fs/promises');
  await mkdir(small);
  const smallFiles: string[] = [];
  for (const line of (await readFile(scifact, 'utf8')).split('\n')) {
    if (smallFiles.length >= Number(values.files) || line.trim() === '') continue;
    const row = JSON.parse(line) as { _id: string; title: string; text: string };
    const path = join(small, `${row._id}.txt`);
    await writeFile(path, `${row.title}\n\n${row.text}\n`);
    smallFiles.push(path);
  }
  const fixtures = (await readdir(FIXTURE_DOCUMENTS))
    .filter((f) => /\.(pdf|docx)$/.test(f))
    .map((f) => join(FIXTURE_DOCUMENTS, f));
  const chapters = (await readdir(danish)).filter((f) => f.endsWith('.md')).map((f) => join(danish, f));
  const pdf = join(work, 'large.pdf');
  await writeFile(pdf, writeTextPdf(Number(values.pages), 45));
  const chosen = new Set(values.sets.split(','));
  return [
    { key: 'small', name: `small .txt ×${smallFiles.length}`, files: smallFiles },
    { key: 'mixed', name: `mixed ×${fixtures.length + chapters.length}`, files: [...fixtures, ...chapters] },
    { key: 'pdf', name: `pdf ${values.pages} pages`, files: [pdf] },
  ].filter((s) => chosen.has(s.key));
}

type Side = 'kilde' | 'langchain' | 'langchain+fts' | 'langchain-per-file' | 'lancedb-floor';

function runOnce(side: Side, list: string, dir: string): Run {
  // Kilde's side runs the built code (dist/), as `kilde ingest` does: no TypeScript compiled in the
  // timed process or its workers (use-dist.mjs; Node strips the bench file's own types).
  const args =
    side === 'kilde'
      ? [
          '--disable-warning=ExperimentalWarning',
          '--import',
          here('./lib/use-dist.mjs'),
          here('./vs-langchain-kilde.ts'),
          list,
          dir,
          '400',
          '80',
        ]
      : [join(LC_DIR, 'runner.mjs'), list, dir, '1600', '320'];
  // Kilde's side gets the memory settings the `kilde` launcher gives `kilde ingest` (bin/kilde), and
  // the user's compile cache bin/kilde.js turns on (src/cli/compile-cache.ts; warm after a first run).
  const cache = compileCacheDir(process.env);
  const env =
    side === 'kilde'
      ? {
          ...process.env,
          GLIBC_TUNABLES: withMallocTunables(process.env.GLIBC_TUNABLES),
          NODE_OPTIONS: withYoungGenerationFlag(process.env.NODE_OPTIONS),
          ...(cache ? { NODE_COMPILE_CACHE: cache } : {}),
        }
      : side === 'langchain+fts'
        ? { ...process.env, LC_FTS: '1' }
        : side === 'langchain-per-file'
          ? { ...process.env, LC_PER_FILE: '1' }
          : side === 'lancedb-floor'
            ? { ...process.env, LC_FLOOR: '1' }
            : process.env;
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env });
  const line = res.stdout.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || !line.startsWith('{')) {
    throw new Error(`${side} failed (exit ${res.status}): ${res.stderr.slice(-2000)}`);
  }
  return JSON.parse(line) as Run;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = (s.length - 1) / 2;
  return { min: s[0]!, median: (s[Math.floor(mid)]! + s[Math.ceil(mid)]!) / 2 };
};
const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;

try {
  const sets = await writeSets();
  const load = () =>
    process.platform === 'linux'
      ? (execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0] ?? '?')
      : '?';
  console.log(`rounds ${ROUNDS}, each variant a fresh process; load average at start ${load()}`);
  for (const set of sets) {
    const list = join(work, 'files.json');
    await writeFile(list, JSON.stringify(set.files));
    const runs: Record<Side, Run[]> = {
      kilde: [],
      langchain: [],
      'langchain+fts': [],
      'langchain-per-file': [],
      'lancedb-floor': [],
    };
    for (let r = 0; r < ROUNDS; r++) {
      const sides: Side[] = ['kilde', 'langchain', 'langchain+fts', 'langchain-per-file', 'lancedb-floor'];
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const dir = await mkdtemp(join(work, `${side}-`));
        runs[side].push(runOnce(side, list, dir));
        await rm(dir, { recursive: true, force: true });
      }
    }
    const k = stats(runs.kilde.map((r) => r.seconds));
    const l = stats(runs.langchain.map((r) => r.seconds));
    const kIngest = stats(runs.kilde.map((r) => r.ingest ?? r.seconds));
    const kStart = stats(runs.kilde.map((r) => r.startup ?? 0));
    const kRss = Math.max(...runs.kilde.map((r) => r.peakRss));
    const lRss = Math.max(...runs.langchain.map((r) => r.peakRss));
    // CPU, steadier than wall time on a loaded machine (each side's whole process, Kilde's workers too).
    const kCpu = stats(runs.kilde.map((r) => r.cpu ?? Number.NaN));
    const lCpu = stats(runs.langchain.map((r) => r.cpu ?? Number.NaN));
    const f = stats(runs['langchain+fts'].map((r) => r.seconds));
    const fCpu = stats(runs['langchain+fts'].map((r) => r.cpu ?? Number.NaN));
    const fRss = Math.max(...runs['langchain+fts'].map((r) => r.peakRss));
    const p = stats(runs['langchain-per-file'].map((r) => r.seconds));
    const pCpu = stats(runs['langchain-per-file'].map((r) => r.cpu ?? Number.NaN));
    const pRss = Math.max(...runs['langchain-per-file'].map((r) => r.peakRss));
    // The floors: LangChain's loaders and splitters alone (most of its run), and LanceDB alone writing
    // the chunks (and their full-text index). Any pipeline that ends in a LanceDB table pays the
    // second, so it can be at most LangChain's time over the write's faster than LangChain.js.
    const floors = runs['lancedb-floor'];
    const rd = stats(floors.map((r) => r.loadSeconds ?? 0));
    const w = stats(floors.map((r) => r.seconds));
    const wf = stats(floors.map((r) => r.seconds + (r.ftsSeconds ?? 0)));
    console.log(
      `${set.name.padEnd(18)} Kilde ${k.min.toFixed(1)}/${k.median.toFixed(1)} s (${runs.kilde[0]!.chunks} chunks, peak ${mib(kRss)}); ` +
        `LangChain.js ${l.min.toFixed(1)}/${l.median.toFixed(1)} s (${runs.langchain[0]!.chunks} chunks, peak ${mib(lRss)}); ` +
        `speed ratio min ${(l.min / k.min).toFixed(2)}×, median ${(l.median / k.median).toFixed(2)}×; RSS ratio ${(kRss / lRss).toFixed(2)}; load ${load()}\n` +
        `${''.padEnd(18)} (Kilde's start-up ${kStart.median.toFixed(1)} s; its ingests alone ${kIngest.min.toFixed(1)}/${kIngest.median.toFixed(1)} s: ratio ${(l.min / kIngest.min).toFixed(2)}× / ${(l.median / kIngest.median).toFixed(2)}×; ` +
        `peak RSS of its main process ${mib(Math.max(...runs.kilde.map((r) => r.peakMain ?? 0)))}, of its largest extraction worker ${mib(Math.max(...runs.kilde.map((r) => r.peakWorker ?? 0)))})\n` +
        `${''.padEnd(18)} CPU (user + system, whole processes) Kilde ${kCpu.min.toFixed(2)}/${kCpu.median.toFixed(2)} s, LangChain.js ${lCpu.min.toFixed(2)}/${lCpu.median.toFixed(2)} s: ratio ${(lCpu.min / kCpu.min).toFixed(2)}× / ${(lCpu.median / kCpu.median).toFixed(2)}×\n` +
        `${''.padEnd(18)} feature-matched: LangChain.js with a full-text index over its chunks (Kilde's table always has one) ${f.min.toFixed(1)}/${f.median.toFixed(1)} s, CPU ${fCpu.min.toFixed(2)}/${fCpu.median.toFixed(2)} s, peak ${mib(fRss)}: speed ratio ${(f.min / k.min).toFixed(2)}× / ${(f.median / k.median).toFixed(2)}×\n` +
        `${''.padEnd(18)} per file: LangChain.js adding each file to its table as it is loaded (as uploads arriving one by one) ${p.min.toFixed(1)}/${p.median.toFixed(1)} s, CPU ${pCpu.min.toFixed(2)}/${pCpu.median.toFixed(2)} s, peak ${mib(pRss)}: speed ratio ${(p.min / k.min).toFixed(2)}× / ${(p.median / k.median).toFixed(2)}×\n` +
        `${''.padEnd(18)} floors: LangChain's loaders and splitters alone ${rd.min.toFixed(2)}/${rd.median.toFixed(2)} s; LanceDB alone writing their chunks ${w.min.toFixed(2)}/${w.median.toFixed(2)} s, with a full-text index ${wf.min.toFixed(2)}/${wf.median.toFixed(2)} s\n` +
        `${''.padEnd(18)} so with nothing but LanceDB's write counted, a pipeline could reach at most ${(l.min / w.min).toFixed(2)}× LangChain.js, ${(f.min / wf.min).toFixed(2)}× the feature-matched run`,
    );
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
