/**
 * Kilde's ingestion against the LangChain.js pipeline a TypeScript user would build instead: the
 * same files, chunk budgets of the same size (400 tokens, 80 overlap on Kilde's side; 1600 and 320
 * characters for RecursiveCharacterTextSplitter, about four characters a token), a zero-cost
 * embedder on LangChain's side and LanceDB on both sides. Kilde runs twice: lexical only (the CLI's
 * default: no model, no vector column) and with dense vectors from a zero-cost `http-compat` endpoint in
 * this process (bench/lib/zero-cost.ts: the same columns as LangChain's, plus the HTTP client's cost). Every variant runs in a fresh process:
 * Kilde's is the real `kilde ingest` a user runs (the bin/kilde launcher over the built dist/, built
 * first, its compile cache warm; bench/lib/kilde-cli.ts), LangChain's bench/vs-langchain/runner.mjs;
 * both are timed from the spawn to the exit (Node's start and module loading included), with the CPU
 * of the whole process tree and its peak RSS measured from outside (bench/lib/measured.ts). Rounds are
 * interleaved (the order alternates); prints min and median seconds, the speed ratio (LangChain time /
 * Kilde time: above 1
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
 * Over HTTP (the small set): one `PUT /api/v1/ingest` per file at c=1 and c=4 and `kilde ingest --url`
 * against a real `kilde serve ingest` (bench/lib/kilde-http.ts, as bench:ingest-http runs them), in the
 * same interleaved rounds, against LangChain.js per file. Ends with every row of issue #32's table:
 * one upload at a time (server CPU per file, LanceDB's share, table versions per 1,000 uploads),
 * bulk over HTTP against LangChain.js per file and the local CLI, the local CLI against LangChain.js
 * bulk on each set with the CPU ratio, and the peak RSS ratios, with the load average.
 *
 * Usage: npm run bench:vs-langchain [-- --quick] [-- --rounds 2 --files 1000 --pages 300 --sets small,mixed,pdf --no-http]
 * --quick: one round, 300 small files, a 100-page PDF, no floor or feature-matched variants.
 * The search side is `npm run bench:vs-langchain-search` (bench/vs-langchain-search.ts). Not measured: token-budget chunking alone.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeIngestSets } from './lib/ingest-sets.js';
import { type CliRun, kildeCli } from './lib/kilde-cli.js';
import { type HttpRun, overJobs, overPut } from './lib/kilde-http.js';
import {
  ensureLangChain,
  type LangChainMode,
  type LangChainRun,
  runLangChain,
} from './lib/langchain-side.js';
import { serveZeroCostEmbeddings } from './lib/zero-cost.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    files: { type: 'string' },
    pages: { type: 'string' },
    sets: { type: 'string', default: 'small,mixed,pdf' },
    'no-http': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(`npm run bench:vs-langchain [-- --quick] [-- --rounds 2 --files 1000 --pages 300 --sets small,mixed,pdf --no-http]
  Kilde's real \`kilde ingest\` (bin/kilde over dist/, lexical only and with dense vectors from a zero-cost
  endpoint) against LangChain.js bulk on each set, both timed spawn to exit, with the CPU of each side's whole
  process tree and its peak RSS; on the small set also the HTTP paths (PUT per file, kilde ingest --url) unless
  --no-http; ends with the rows of issue #32's table.
  --quick    one round, 300 small files, a 100-page PDF, no floor or feature-matched variants
  --rounds   interleaved rounds (order alternating), default 2 (1 with --quick)
  --files    small files (SciFact abstracts), default 1000 (300 with --quick)
  --pages    pages of the generated PDF, default 300 (100 with --quick)
  --sets     which of small, mixed, pdf
  --no-http  leave out the HTTP paths`);
  process.exit(0);
}
const QUICK = values.quick;
const ROUNDS = Number(values.rounds ?? (QUICK ? 1 : 2));
const FILES = Number(values.files ?? (QUICK ? 300 : 1000));
const PAGES = Number(values.pages ?? (QUICK ? 100 : 300));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

ensureLangChain();
// Kilde's side runs dist/: bring it up to date with src/ first.
console.log('building dist/ (npm run build: tsc -b tsconfig.build.json, scripts/eld-table.mjs) ...');
execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
  cwd: here('../'),
  stdio: 'inherit',
});
// As `npm run build` does: eld's language table as JSON beside the built detector.
execFileSync(process.execPath, [here('../scripts/eld-table.mjs')], { stdio: 'inherit' });

const work = await mkdtemp(join(tmpdir(), 'kilde-vs-langchain-'));

// Kilde's dense vectors come from a zero-cost endpoint in this process (its CPU is not Kilde's).
const embeddings = await serveZeroCostEmbeddings(384);
/**
 * The local `kilde ingest` of the set's files, as a user runs it (bench/lib/kilde-cli.ts): lexical
 * only, the CLI's default (no model on either side; LangChain's table has a constant vector column,
 * Kilde's none), or with dense vectors from the zero-cost endpoint (the same columns as LangChain's,
 * plus the HTTP client's cost).
 */
const kildeOnce = (files: readonly string[], dense = false) =>
  kildeCli(work, files, {
    embeddings: dense ? embeddings.url : undefined,
    chunkTokens: 400,
    overlapTokens: 80,
  });

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = (s.length - 1) / 2;
  return { min: s[0]!, median: (s[Math.floor(mid)]! + s[Math.ceil(mid)]!) / 2 };
};
const med = (xs: number[]) => stats(xs).median;
const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;
const load = () => loadavg()[0]!.toFixed(1);
const x2 = (v: number) => `${v.toFixed(2)}×`;

type Side = 'kilde' | 'kilde-dense' | LangChainMode | 'put-1' | 'put-4' | 'url';
const summary: string[] = [];
const rssRatios: string[] = [];

try {
  const sets = await writeIngestSets(work, { files: FILES, pages: PAGES, keys: values.sets.split(',') });
  console.log(
    `bench:vs-langchain — rounds ${ROUNDS}, every variant a fresh process, order alternating; ` +
      `load average ${load()} on ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores at the start`,
  );
  // Untimed: the first `kilde` after a build fills the user's compile cache (src/cli/compile-cache.ts);
  // the timed runs are a user's later runs.
  await kildeOnce([sets[0]!.files[0]!]);
  for (const set of sets) {
    const list = join(work, 'files.json');
    await writeFile(list, JSON.stringify(set.files));
    const http = set.key === 'small' && !values['no-http'];
    const sides: Side[] = [
      'kilde',
      'kilde-dense',
      'bulk',
      ...(QUICK ? [] : (['fts', 'floor'] as const)),
      ...(set.key === 'small' || !QUICK ? (['per-file'] as const) : []),
      ...(http ? (['put-1', 'put-4', 'url'] as const) : []),
    ];
    const runs = new Map<Side, Array<LangChainRun | CliRun | HttpRun>>(sides.map((s) => [s, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const dir = dirname(set.files[0]!);
        const run =
          side === 'kilde'
            ? await kildeOnce(set.files)
            : side === 'kilde-dense'
              ? await kildeOnce(set.files, true)
              : side === 'put-1'
                ? await overPut(work, set.files, 1)
                : side === 'put-4'
                  ? await overPut(work, set.files, 4)
                  : side === 'url'
                    ? await overJobs(work, dir, 8)
                    : await runLangChain(side, list, work);
        runs.get(side)!.push(run);
      }
    }
    const lc = (side: LangChainMode) => runs.get(side) as LangChainRun[];
    const kilde = runs.get('kilde') as CliRun[];
    const l = stats(lc('bulk').map((r) => r.processSeconds));
    const lRss = Math.max(...lc('bulk').map((r) => r.peakRss));
    const lCpu = stats(lc('bulk').map((r) => r.cpu ?? Number.NaN));
    console.log(
      `\n${set.name} (load ${load()})\n` +
        `  LangChain.js bulk ${l.min.toFixed(2)}/${l.median.toFixed(2)} s min/median (${lc('bulk')[0]!.chunks} chunks, peak ${mib(lRss)}, CPU ${lCpu.median.toFixed(2)} s; from its first file ${med(lc('bulk').map((r) => r.seconds)).toFixed(2)} s)`,
    );
    // Both sides from the spawn to the exit (Node's start and module loading included), as a user waits;
    // CPU, steadier than wall time on a loaded machine (each side's whole process tree, Kilde's workers too).
    const versus = (side: 'kilde' | 'kilde-dense', label: string) => {
      const rs = runs.get(side) as CliRun[];
      const k = stats(rs.map((r) => r.seconds));
      const kCpu = stats(rs.map((r) => r.cpu));
      const kRss = Math.max(...rs.map((r) => r.peakRss));
      console.log(
        `  ${label} ${k.min.toFixed(2)}/${k.median.toFixed(2)} s (${rs[0]!.chunks} chunks, peak ${mib(kRss)}, CPU ${kCpu.median.toFixed(2)} s, ${med(rs.map((r) => r.versions)).toFixed(0)} table versions)\n` +
          `    speed ratio (LangChain.js time / Kilde time) min ${x2(l.min / k.min)}, median ${x2(l.median / k.median)}; CPU ratio (Kilde / LangChain.js) ${x2(kCpu.median / lCpu.median)}; peak RSS ratio ${x2(kRss / lRss)}\n` +
          `    (main process: CPU ${med(rs.map((r) => r.cpuMain)).toFixed(2)} s, peak ${mib(Math.max(...rs.map((r) => r.peakMain)))}; largest extraction worker peak ${mib(Math.max(...rs.map((r) => r.peakWorker)))})`,
      );
      return { k, kCpu, kRss };
    };
    const { k, kCpu, kRss } = versus(
      'kilde',
      'Kilde CLI, `kilde ingest` lexical only (its default, no model)',
    );
    const dense = versus('kilde-dense', 'Kilde CLI with dense vectors from a zero-cost endpoint');
    summary.push(
      `| local CLI, ${set.name} | ${x2(l.median / k.median)} of LangChain.js bulk (min ${x2(l.min / k.min)}), at ${x2(kCpu.median / lCpu.median)} its CPU; with dense vectors ${x2(l.median / dense.k.median)}, at ${x2(dense.kCpu.median / lCpu.median)} its CPU |`,
    );
    rssRatios.push(`${set.name} ${x2(kRss / lRss)} (dense ${x2(dense.kRss / lRss)})`);
    if (!QUICK) {
      const f = stats(lc('fts').map((r) => r.processSeconds));
      const floors = lc('floor');
      const rd = stats(floors.map((r) => r.loadSeconds ?? 0));
      const w = stats(floors.map((r) => r.seconds));
      const wf = stats(floors.map((r) => r.seconds + (r.ftsSeconds ?? 0)));
      console.log(
        `  feature-matched: LangChain.js with a full-text index over its chunks (Kilde's table always has one) ${f.median.toFixed(2)} s: speed ratio ${x2(f.median / k.median)}\n` +
          `  floors: LangChain's loaders and splitters alone ${rd.median.toFixed(2)} s; LanceDB alone writing their chunks ${w.median.toFixed(2)} s, with a full-text index ${wf.median.toFixed(2)} s`,
      );
    }
    if (runs.has('per-file')) {
      const p = stats(lc('per-file').map((r) => r.processSeconds));
      console.log(
        `  LangChain.js per file (each file added to its table as it is loaded) ${p.median.toFixed(2)} s, CPU ${med(lc('per-file').map((r) => r.cpu ?? Number.NaN)).toFixed(2)} s, peak ${mib(Math.max(...lc('per-file').map((r) => r.peakRss)))}; ` +
          `its time / the Kilde CLI's ${x2(p.median / k.median)}`,
      );
      if (http) {
        const n = set.files.length;
        const hs = (side: Side) => runs.get(side) as HttpRun[];
        for (const side of ['put-1', 'put-4', 'url'] as const) {
          const rs = hs(side);
          const sec = med(rs.map((r) => r.seconds));
          const cpu = med(rs.map((r) => r.cpu));
          const lance = med(rs.map((r) => r.lanceCpu));
          const versions = (med(rs.map((r) => r.versions)) / n) * 1000;
          const label =
            side === 'url'
              ? 'kilde ingest --url (jobs, c=8)'
              : `PUT /api/v1/ingest per file, c=${side.slice(4)}`;
          console.log(
            `  ${label}: ${sec.toFixed(2)} s, ${(n / sec).toFixed(0)} files/s; server CPU ${((cpu / n) * 1000).toFixed(1)} ms a file, ` +
              `${((lance / n) * 1000).toFixed(1)} ms of it in LanceDB's threads; ${versions.toFixed(0)} table versions per 1,000 files; peak ${mib(Math.max(...rs.map((r) => r.peakRss)))}`,
          );
          // CPU too, steadier than wall time under load: LangChain's whole per-file process against the
          // server's process tree (the client's own CPU left out, as LangChain has none).
          // A server is already up: LangChain's time from its first file (its imports left out).
          const lcCpu = med(lc('per-file').map((r) => r.cpu ?? Number.NaN));
          const lcSeconds = med(lc('per-file').map((r) => r.seconds));
          const vsLc = `${x2(lcSeconds / sec)} of LangChain.js per file (CPU ${x2(lcCpu / cpu)}: ${lcCpu.toFixed(2)} s against the server's ${cpu.toFixed(2)} s)`;
          summary.unshift(
            side === 'url'
              ? `| \`kilde ingest --url\` (bulk over HTTP, jobs) | ${vsLc}; ${x2(k.median / sec)} the CLI path's throughput (target ≥ 0.9); ${versions.toFixed(0)} table versions per 1,000 files (the CLI path ${((med(kilde.map((r) => r.versions)) / n) * 1000).toFixed(0)}); ${lance.toFixed(2)} s of LanceDB CPU |`
              : `| one \`PUT /api/v1/ingest\` per small file, c=${side.slice(4)} | ${vsLc}, target ≥ 1; ${((cpu / n) * 1000).toFixed(1)} ms of server CPU a file (target ≤ 5), ${((lance / n) * 1000).toFixed(1)} ms in LanceDB's threads; ${versions.toFixed(0)} table versions per 1,000 uploads (target ≤ 50) |`,
          );
        }
      }
    }
  }
  // The rows of issue #32's table, in its order (one upload at a time first).
  const order = (row: string) =>
    row.includes('PUT') ? (row.includes('c=1 ') ? 0 : 1) : row.includes('--url') ? 2 : 3;
  summary.sort((a, b) => order(a) - order(b));
  console.log(
    `\nissue #32's table (LangChain.js time / Kilde time, and LangChain.js CPU / Kilde CPU: above 1 means Kilde is faster or cheaper; medians of ${ROUNDS} round(s); load average now ${load()})\n` +
      `| Path | Kilde vs LangChain.js |\n|---|---|\n${summary.join('\n')}\n| peak RSS, Kilde / LangChain.js bulk | ${rssRatios.join(', ')} (target ≤ 1.5×) |`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
