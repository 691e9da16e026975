/**
 * Many small files over HTTP, end to end: a real `kilde serve ingest` (the built dist/, started by
 * the `kilde` launcher with its memory settings, lexical-only, LanceDB in a temp dir) taking one
 * `PUT /api/v1/ingest` per file (multipart, as a chat platform uploads them) at each `--put`
 * concurrency, the real client `kilde ingest --url` (job batches: many files per
 * `POST /api/v1/job-batches`, run in the server's pipeline passes; `--url-concurrency` only against a
 * server without them), the local `kilde ingest` of the same folder (the embedded index, passes of files), and
 * LangChain.js adding each file to its LanceDB table as it is loaded (bench/vs-langchain/runner.mjs,
 * LC_PER_FILE=1: what uploads arriving one by one cost there). Each SciFact abstract becomes one small
 * .txt file. Every variant is a fresh process; rounds alternate the order.
 *
 * Prints per variant: median wall time and files/s, the server's CPU (its whole process tree) per
 * file and how much of it LanceDB's threads used, the LanceDB table versions per 1,000 files, the
 * peak RSS; then the rows of issue #32's table for these paths: one upload at a time (c=1, c=4)
 * against LangChain.js per file (LC time / Kilde time; target ≥ 1×, ≤ 5 ms of server CPU a file,
 * ≤ 50 versions per 1,000 uploads) and `kilde ingest --url` against LangChain.js per file and against
 * the local CLI (target ≥ 0.9× its throughput), with each round's time and CPU ratios (the target
 * holds when it holds in every round). Asserts nothing.
 *
 * Usage: npm run bench:ingest-http [-- --quick] [-- --files 1000 --put 1,4|none --url-concurrency 8 --rounds 2 --no-langchain --no-build --sets small,mixed,pdf --pages 300]
 */
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeIngestSets } from './lib/ingest-sets.js';
import { type HttpRun, local, overJobs, overPut } from './lib/kilde-http.js';
import { ensureLangChain, type LangChainRun, runLangChain } from './lib/langchain-side.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    files: { type: 'string' },
    put: { type: 'string', default: '1,4' },
    'url-concurrency': { type: 'string', default: '8' },
    rounds: { type: 'string' },
    'no-langchain': { type: 'boolean', default: false },
    /** Use dist/ as built (another change in the tree may not compile right now). */
    'no-build': { type: 'boolean', default: false },
    /** Also the mixed documents and a large PDF (`--url` against the local CLI only): `small,mixed,pdf`. */
    sets: { type: 'string', default: 'small' },
    pages: { type: 'string', default: '300' },
  },
});
// --quick: 300 files, one round.
const FILES = Number(values.files ?? (values.quick ? 300 : 1000));
const ROUNDS = Number(values.rounds ?? (values.quick ? 1 : 2));
// `--put none`: no one-upload-at-a-time variant.
const PUT = values.put === 'none' ? [] : values.put.split(',').map(Number);
const URL_C = Number(values['url-concurrency']);
/** `kilde ingest --url` sends job batches; `--url-concurrency` matters only against a server without them. */
const JOBS = 'kilde ingest --url (batches)';
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

if (!values['no-build']) {
  console.log('building dist/ (tsc -b tsconfig.build.json) ...');
  execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
    cwd: here('../'),
    stdio: 'inherit',
  });
}
if (!values['no-langchain']) ensureLangChain();

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-http-'));
const load = () => loadavg()[0]!.toFixed(1);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
};
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

try {
  const SETS = values.sets.split(',');
  if (SETS.includes('small')) await smallFiles();
  for (const key of SETS.filter((k) => k !== 'small')) await otherSet(key as 'mixed' | 'pdf');
  console.log(`load average at the end ${load()}`);
} finally {
  await rm(work, { recursive: true, force: true });
}

async function smallFiles() {
  const [set] = await writeIngestSets(work, { files: FILES, pages: 0, keys: ['small'] });
  const files = set!.files;
  const dir = dirname(files[0]!);
  const n = files.length;
  const list = join(work, 'files.json');
  await writeFile(list, JSON.stringify(files));
  console.log(
    `bench:ingest-http — ${n} SciFact abstracts as .txt files, rounds ${ROUNDS}, every variant a fresh process, order alternating; ` +
      `load average ${load()} on ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores`,
  );
  type Variant = { name: string; run: () => Promise<HttpRun | LangChainRun> };
  const variants: Variant[] = [
    { name: 'local kilde ingest', run: () => local(work, dir) },
    { name: JOBS, run: () => overJobs(work, dir, URL_C) },
    ...PUT.map((c) => ({ name: `PUT /api/v1/ingest, c=${c}`, run: () => overPut(work, files, c) })),
    ...(values['no-langchain']
      ? []
      : [{ name: 'LangChain.js per file', run: () => runLangChain('per-file', list, work) }]),
  ];
  const runs = new Map<string, Array<HttpRun | LangChainRun>>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) runs.get(v.name)!.push(await v.run());
  }
  const sec = new Map<string, number>();
  for (const v of variants) {
    const rs = runs.get(v.name)!;
    const s = median(rs.map((x) => x.seconds));
    sec.set(v.name, s);
    const line = [
      `${v.name.padEnd(28)} ${s.toFixed(2).padStart(6)} s, ${(n / s).toFixed(0).padStart(4)} files/s`,
    ];
    if ('versions' in rs[0]!) {
      const hs = rs as HttpRun[];
      const cpu = median(hs.map((x) => x.cpu));
      const lance = median(hs.map((x) => x.lanceCpu));
      const who = v.name.startsWith('local') ? 'CLI' : 'server';
      line.push(
        `${who} CPU ${cpu.toFixed(2)} s (${((cpu / n) * 1000).toFixed(1)} ms a file, LanceDB's threads ${((lance / n) * 1000).toFixed(1)} ms: ${lance.toFixed(2)} s)`,
        `${((median(hs.map((x) => x.versions)) / n) * 1000).toFixed(0)} table versions per 1,000 files`,
        `peak ${mib(Math.max(...hs.map((x) => x.peakRss)))}`,
      );
      if (who === 'server') {
        // The server's CPU a file by where it ran: LanceDB's threads, the rest of its main process
        // (the HTTP server, the pipeline, Node), its worker processes.
        const main = median(hs.map((x) => x.mainCpu ?? Number.NaN));
        const perFile = (s: number) => ((s / n) * 1000).toFixed(1);
        line.push(
          `a file: LanceDB ${perFile(lance)} ms, the rest of the main process ${perFile(main - lance)} ms, the workers ${perFile(cpu - main)} ms`,
          `client CPU ${median(hs.map((x) => x.clientCpu)).toFixed(2)} s`,
        );
      }
    } else {
      const ls = rs as LangChainRun[];
      line.push(
        `CPU ${median(ls.map((x) => x.cpu ?? Number.NaN)).toFixed(2)} s, peak ${mib(Math.max(...ls.map((x) => x.peakRss)))}`,
      );
    }
    console.log(line.join('; '));
  }
  // Issue #32's rows for these paths.
  const lc = sec.get('LangChain.js per file');
  const lcRuns = runs.get('LangChain.js per file') as LangChainRun[] | undefined;
  const lcCpu = lcRuns ? median(lcRuns.map((x) => x.cpu ?? Number.NaN)) : undefined;
  const cli = sec.get('local kilde ingest')!;
  console.log(
    '\nissue #32 rows (ratio: the other time / Kilde time, or CPU, above 1 means Kilde is faster or cheaper):',
  );
  for (const c of PUT) {
    const name = `PUT /api/v1/ingest, c=${c}`;
    const hs = runs.get(name) as HttpRun[];
    const cpuMs = (median(hs.map((x) => x.cpu)) / n) * 1000;
    const versions = (median(hs.map((x) => x.versions)) / n) * 1000;
    console.log(
      `  one upload at a time, c=${c}: ${lc ? `${(lc / sec.get(name)!).toFixed(2)}× LangChain.js per file (target ≥ 1; CPU ${(lcCpu! / median(hs.map((x) => x.cpu))).toFixed(2)}×, LangChain's whole process against the server's)` : 'LangChain.js not run'}; ` +
        `${cpuMs.toFixed(1)} ms server CPU a file (target ≤ 5); ${versions.toFixed(0)} table versions per 1,000 uploads (target ≤ 50)`,
    );
  }
  const jobs = JOBS;
  const jobRuns = runs.get(jobs) as HttpRun[];
  const localRuns = runs.get('local kilde ingest') as HttpRun[];
  console.log(
    `  kilde ingest --url: ${lc ? `${(lc / sec.get(jobs)!).toFixed(2)}× LangChain.js per file; ` : ''}${(cli / sec.get(jobs)!).toFixed(2)}× the local CLI's throughput (target ≥ 0.9); ` +
      `${((median(jobRuns.map((x) => x.versions)) / n) * 1000).toFixed(0)} table versions per 1,000 files against the CLI's ${((median(localRuns.map((x) => x.versions)) / n) * 1000).toFixed(0)}; ` +
      `LanceDB CPU ${median(jobRuns.map((x) => x.lanceCpu)).toFixed(2)} s against the CLI's ${median(localRuns.map((x) => x.lanceCpu)).toFixed(2)} s; ` +
      `CPU of server and client together ${median(jobRuns.map((x) => x.cpu + x.clientCpu)).toFixed(2)} s against the CLI's ${median(localRuns.map((x) => x.cpu)).toFixed(2)} s ` +
      `(${(median(localRuns.map((x) => x.cpu)) / median(jobRuns.map((x) => x.cpu + x.clientCpu))).toFixed(2)}×)`,
  );
  console.log(`  kilde ingest --url ${perRound(localRuns, jobRuns)}`);
}

/** Each round's ratios (the runs of a round are interleaved): time and CPU, the local CLI's over `--url`'s. */
function perRound(local: HttpRun[], url: HttpRun[]): string {
  const time = local.map((l, r) => (l.seconds / url[r]!.seconds).toFixed(2));
  const cpu = local.map((l, r) => (l.cpu / (url[r]!.cpu + url[r]!.clientCpu)).toFixed(2));
  return `by round: time ${time.join(', ')}×; CPU ${cpu.join(', ')}× (target ≥ 0.9 in every round)`;
}

/**
 * `kilde ingest --url` (job batches) against the local `kilde ingest` on the mixed documents or a
 * large PDF: time, and the CPU of the server and the client together against the CLI's.
 */
async function otherSet(key: 'mixed' | 'pdf') {
  const [set] = await writeIngestSets(work, { files: 0, pages: Number(values.pages), keys: [key] });
  const dir = join(work, `${key}-files`);
  await mkdir(dir, { recursive: true });
  for (const f of set!.files) await copyFile(f, join(dir, basename(f)));
  const runs: { local: HttpRun[]; url: HttpRun[] } = { local: [], url: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? (['local', 'url'] as const) : (['url', 'local'] as const);
    for (const v of order)
      runs[v].push(await (v === 'local' ? local(work, dir) : overJobs(work, dir, URL_C)));
  }
  const sec = (xs: HttpRun[]) => median(xs.map((x) => x.seconds));
  const cpu = (xs: HttpRun[], client: boolean) => median(xs.map((x) => x.cpu + (client ? x.clientCpu : 0)));
  console.log(
    `${set!.name}: local ${sec(runs.local).toFixed(2)} s (CPU ${cpu(runs.local, false).toFixed(2)} s, peak ${mib(Math.max(...runs.local.map((x) => x.peakRss)))}); ` +
      `--url ${sec(runs.url).toFixed(2)} s (server and client CPU ${cpu(runs.url, true).toFixed(2)} s, server peak ${mib(Math.max(...runs.url.map((x) => x.peakRss)))}): ` +
      `${(sec(runs.local) / sec(runs.url)).toFixed(2)}× the local CLI's throughput (target ≥ 0.9), CPU ${(cpu(runs.local, false) / cpu(runs.url, true)).toFixed(2)}×; load ${load()}`,
  );
  console.log(`  ${set!.name} ${perRound(runs.local, runs.url)}`);
}
