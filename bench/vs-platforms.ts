/**
 * `npm run bench:vs-platforms`: Kilde against what its users would run instead, each on its own
 * ground, over the same files (bench/lib/ingest-sets.ts: small .txt files, 61 mixed real documents,
 * one large PDF) with the same zero-cost dense embedder (one fixed unit vector per text):
 *
 * - Open WebUI 0.12.4's own knowledge ingestion (bench/vs-platforms/owui_ingest.py, in
 *   .tmp/owui-venv): its default loader, splitters, embedding path and vector store (embedded
 *   Chroma), one file at a time as uploads into a knowledge base go, against Kilde into its default
 *   store (embedded LanceDB, with its full-text index).
 * - The reference deployment's ingestion (bench/vs-platforms/haystack_ingest.py, in
 *   .tmp/interop-venv): Haystack converters, DocumentSplitter, fastembed's Qdrant/bm25 and
 *   QdrantDocumentStore into a real Qdrant, once per file as its service runs it (and once over all
 *   files, Haystack's best case), against Kilde into the same Qdrant (dense + BM25 sparse vectors in
 *   the same layout). Qdrant's own CPU is counted on both sides.
 *
 * Kilde's bulk sides (`kilde`, `kilde-qdrant`) are the real `kilde ingest` (bin/kilde over the built
 * dist/, bench/lib/kilde-cli.ts), spawn to exit, with the CPU of its whole process tree and its peak
 * RSS measured from outside; its fixed cost (the same command on one short file: Node's start, module
 * loading, the index opened, the pool started) is taken off its time and CPU, as the platforms' imports
 * and pipeline builds are left out of theirs, and printed. Its per-upload sides (`kilde-put`,
 * `kilde-qdrant-put`) are a real `kilde serve ingest` taking one `PUT /api/v1/ingest` per file, one at
 * a time, as Open WebUI's users and the reference service's callers send them, counted from the first
 * upload. Kilde's dense vectors come from a zero-cost `http-compat` endpoint in this process. Into
 * Qdrant, the one-file run makes the collection and its payload indexes first, and Haystack's pipeline
 * build makes its own before it prints `{"ready": true}`: Qdrant's CPU and requests (its telemetry)
 * count from there, so neither side pays the collection's creation. Every variant is a fresh process,
 * rounds interleaved (the order alternates). Prints, per set and side, the median wall seconds,
 * files/s, pages/s, the CPU seconds (whole process tree, plus Qdrant's where it is used), the peak RSS,
 * the ratio of each platform's time and CPU to Kilde's (above 5 meets the goal of issue #32 item 4),
 * where each side's time goes and the Qdrant requests of each run by kind. Asserts nothing.
 *
 * Needs .tmp/owui-venv (Open WebUI: see scripts/test-platforms-live.ts), .tmp/interop-venv (haystack-ai,
 * qdrant-haystack, fastembed, pypdf, python-docx, markdown-it-py, mdit_plain) and a Qdrant binary
 * (QDRANT_BIN, default /work/qdrant-src/v1.18.3/target/perf/qdrant); a side whose parts are missing is
 * skipped, saying why.
 *
 * Usage: npm run bench:vs-platforms [-- --quick] [-- --rounds 2 --files 1000 --pages 300 --sets small,mixed,pdf
 *        --sides kilde,kilde-put,owui,kilde-qdrant,kilde-qdrant-put,haystack,haystack-bulk]
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startQdrantNodes } from '../test/live/qdrant-nodes.js';
import { writeIngestSets } from './lib/ingest-sets.js';
import { kildeCli, zeroCostEmbeddingEnv } from './lib/kilde-cli.js';
import { overPut } from './lib/kilde-http.js';
import { describeRequests, type QdrantMark, qdrantMark, qdrantSince } from './lib/qdrant-meter.js';
import { serveZeroCostEmbeddings } from './lib/zero-cost.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    files: { type: 'string' },
    pages: { type: 'string' },
    sets: { type: 'string', default: 'small,mixed,pdf' },
    sides: {
      type: 'string',
      default: 'kilde,kilde-put,owui,kilde-qdrant,kilde-qdrant-put,haystack,haystack-bulk',
    },
  },
});
// --quick: one round, 200 small files, a 100-page PDF (a few minutes on two busy cores).
const ROUNDS = Number(values.rounds ?? (values.quick ? 1 : 2));
const FILES = Number(values.files ?? (values.quick ? 200 : 1000));
const PAGES = Number(values.pages ?? (values.quick ? 100 : 300));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const ROOT = here('../');
const OWUI_PY = join(ROOT, '.tmp/owui-venv/bin/python');
const HAYSTACK_PY = join(ROOT, '.tmp/interop-venv/bin/python');
const QDRANT_BIN = process.env.QDRANT_BIN ?? '/work/qdrant-src/v1.18.3/target/perf/qdrant';
const STOPWORDS = join(ROOT, 'test/fixtures/contracts/bm25-stopwords/english');

type Side =
  | 'kilde'
  | 'kilde-put'
  | 'owui'
  | 'kilde-qdrant'
  | 'kilde-qdrant-put'
  | 'haystack'
  | 'haystack-bulk';
const LABEL: Record<Side, string> = {
  kilde: 'Kilde → LanceDB',
  'kilde-put': 'Kilde PUT per file → LanceDB',
  owui: 'Open WebUI → Chroma',
  'kilde-qdrant': 'Kilde → Qdrant',
  'kilde-qdrant-put': 'Kilde PUT per file → Qdrant',
  haystack: 'Haystack per file → Qdrant',
  'haystack-bulk': 'Haystack bulk → Qdrant',
};
const KILDE_SIDES: Side[] = ['kilde', 'kilde-put', 'kilde-qdrant', 'kilde-qdrant-put'];
const QDRANT_SIDES: Side[] = ['kilde-qdrant', 'kilde-qdrant-put', 'haystack', 'haystack-bulk'];

interface Run {
  files: number;
  chunks: number;
  pages?: number;
  seconds: number;
  /** CPU seconds of the side's process tree; `qdrantCpu`: Qdrant's over the same run. */
  cpu: number;
  qdrantCpu?: number;
  /** Qdrant's REST requests over the run, by endpoint, and their sum. */
  qdrantRequests?: Record<string, number>;
  qdrantTotal?: number;
  qdrantMs?: Record<string, number>;
  /** Kilde's CLI sides: the whole run, spawn to exit, and the one-file run taken off it. */
  whole?: { seconds: number; cpu: number };
  fixed?: { seconds: number; cpu: number };
  peakRss: number;
  stages?: Record<string, number>;
  importSeconds?: number;
  startup?: number;
  cpuMain?: number;
  failed?: string[];
}

const importable = (py: string, module: string) =>
  existsSync(py) && spawnSync(py, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0;
const missing: Partial<Record<Side, string>> = {};
const wanted = values.sides.split(',') as Side[];
if (wanted.includes('owui') && !importable(OWUI_PY, 'open_webui')) {
  missing.owui = `no Open WebUI in ${OWUI_PY} (pip install open-webui==0.12.4 into .tmp/owui-venv)`;
}
const haystackModules =
  'haystack, haystack_integrations.document_stores.qdrant, fastembed, pypdf, docx, mdit_plain';
for (const side of ['haystack', 'haystack-bulk'] as const) {
  if (wanted.includes(side) && !importable(HAYSTACK_PY, haystackModules)) {
    missing[side] =
      `no ${haystackModules} in ${HAYSTACK_PY} (pip install haystack-ai==3.4.1 qdrant-haystack==13.1.0 fastembed==0.9.1 pypdf python-docx markdown-it-py mdit_plain)`;
  }
}
const needsQdrant = wanted.some((s) => QDRANT_SIDES.includes(s));
if (needsQdrant && !existsSync(QDRANT_BIN)) {
  for (const side of QDRANT_SIDES) {
    missing[side] = `no Qdrant binary at ${QDRANT_BIN} (set QDRANT_BIN; docs/qdrant.md)`;
  }
}
for (const [side, why] of Object.entries(missing)) console.log(`skipping ${side}: ${why}`);
const SIDES = wanted.filter((s) => !missing[s]);

// Kilde's sides run the `kilde` command (bin/kilde over dist/): built first.
console.log('building dist/ (tsc -b tsconfig.build.json) ...');
execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
  cwd: ROOT,
  stdio: 'inherit',
});

const work = await mkdtemp(join(tmpdir(), 'kilde-vs-platforms-'));
const nodes = SIDES.some((s) => s !== 'kilde' && s !== 'owui')
  ? await startQdrantNodes(QDRANT_BIN, 1)
  : undefined;
const qdrantUrl = nodes?.urls[0];
const qdrantPid = nodes?.nodes[0]?.process?.pid;
const stopwords = join(work, 'stopwords');
await mkdir(stopwords);
await writeFile(join(stopwords, 'english.txt'), await readFile(STOPWORDS));
const owuiDb = join(work, 'owui-webui.db');

function parseLast(side: Side, res: { status: number | null; stdout: string; stderr: string }): Run {
  const out = String(res.stdout ?? '');
  const line = out.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || !line.startsWith('{')) {
    throw new Error(`${side} failed (exit ${res.status}): ${String(res.stderr ?? '').slice(-3000)}`);
  }
  return JSON.parse(line) as Run;
}

let runCount = 0;
const tiny = join(work, 'fixed-cost.txt');
await writeFile(tiny, 'One short note, so that the run has a file.\n');
const zero = await serveZeroCostEmbeddings(384);
const cliOptions = (env: Record<string, string>) => ({
  embeddings: zero.url,
  chunkTokens: 400,
  overlapTokens: 80,
  env,
});
const qdrantEnv = (collection: string): Record<string, string> => ({
  VECTORDB_URI: qdrantUrl!,
  VECTORDB_INDEX: collection,
  ENABLE_SPARSE_EMBEDDINGS: 'true',
});

/** A Python side to its end, Qdrant's mark taken when it prints `{"ready": true}` (Haystack's). */
async function runPython(
  py: string,
  args: string[],
  onReady: () => Promise<void>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(py, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let ready: Promise<void> | undefined;
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
    if (!ready && stdout.includes('{"ready": true}')) ready = onReady();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-16_000);
  });
  const [status] = (await once(child, 'close')) as [number | null];
  await ready;
  return { status, stdout, stderr };
}

async function runOnce(side: Side, list: string): Promise<Run> {
  const dir = await mkdtemp(join(work, `${side}-`));
  const collection = `bench_${side.replace('-', '_')}_${runCount++}`;
  const files = JSON.parse(await readFile(list, 'utf8')) as string[];
  const qdrantSide = QDRANT_SIDES.includes(side);
  let mark: QdrantMark | undefined;
  const markQdrant = async () => {
    if (qdrantSide) mark = await qdrantMark(qdrantUrl!, qdrantPid);
  };
  const withQdrant = async (run: Run): Promise<Run> => {
    if (!mark) return run;
    const cost = await qdrantSince(qdrantUrl!, qdrantPid, mark);
    return {
      ...run,
      qdrantCpu: cost.cpu,
      qdrantRequests: cost.requests,
      qdrantTotal: cost.total,
      qdrantMs: cost.ms,
    };
  };
  // Every return awaits its Qdrant reading: the collection is dropped in `finally`, after it.
  try {
    const env = side === 'kilde-qdrant' || side === 'kilde-qdrant-put' ? qdrantEnv(collection) : {};
    if (KILDE_SIDES.includes(side)) {
      // Kilde's fixed cost of a run: the real `kilde ingest` of one short file, spawn to exit (Node's
      // start, module loading, the index opened, the pool started). Into Qdrant it also makes the
      // collection and its payload indexes, so the measured run finds them made, as Haystack's
      // pipeline build leaves them before its files.
      const fixed = side === 'kilde-put' ? undefined : await kildeCli(work, [tiny], cliOptions(env));
      await markQdrant();
      if (side === 'kilde-put' || side === 'kilde-qdrant-put') {
        // A real `kilde serve ingest` taking one `PUT /api/v1/ingest` per file, one at a time, as
        // a chat platform's users upload, with the same zero-cost dense endpoint. Its CPU is the
        // server's process tree over the uploads (the server is up before the first).
        const put = await overPut(work, files, 1, { ...zeroCostEmbeddingEnv(zero.url), ...env });
        return await withQdrant({
          files: files.length,
          chunks: Number.NaN,
          seconds: put.seconds,
          cpu: put.cpu,
          peakRss: put.peakRss,
          stages: { "LanceDB's threads": put.lanceCpu, 'main process': put.mainCpu ?? Number.NaN },
        });
      }
      // The real `kilde ingest` (bin/kilde over dist/), spawn to exit, its whole tree measured
      // from outside; its fixed cost (the one-file run's) is left out of time and CPU, as the
      // platforms' imports and pipeline builds are.
      const run = await kildeCli(work, files, cliOptions(env));
      if (!fixed) throw new Error('the fixed-cost run is missing');
      return await withQdrant({
        files: files.length,
        chunks: run.chunks,
        seconds: run.seconds - fixed.seconds,
        cpu: run.cpu - fixed.cpu,
        peakRss: run.peakRss,
        whole: { seconds: run.seconds, cpu: run.cpu },
        fixed: { seconds: fixed.seconds, cpu: fixed.cpu },
        cpuMain: run.cpuMain,
      });
    }
    let res: { status: number | null; stdout: string; stderr: string };
    if (side === 'owui') {
      res = await runPython(OWUI_PY, [here('./vs-platforms/owui_ingest.py'), list, dir, owuiDb], markQdrant);
    } else {
      res = await runPython(
        HAYSTACK_PY,
        [
          here('./vs-platforms/haystack_ingest.py'),
          list,
          qdrantUrl!,
          collection,
          stopwords,
          side === 'haystack' ? 'per-file' : 'bulk',
        ],
        markQdrant,
      );
    }
    return await withQdrant(parseLast(side, res));
  } finally {
    if (qdrantUrl && qdrantSide) {
      await fetch(`${qdrantUrl}/collections/${collection}`, {
        method: 'DELETE',
        headers: { connection: 'close' },
      }).catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
};
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
const load = () => loadavg()[0]!.toFixed(1);
// A ratio over a Kilde figure that is no more than noise (its fixed cost taken off) is not printed.
const ratio = (x: number) =>
  !Number.isFinite(x) || x <= 0
    ? "– (Kilde's side within its fixed cost's noise)"
    : `${x.toFixed(1)}×${x >= 5 ? ' (≥ 5: met)' : ' (< 5: not met)'}`;

try {
  const sets = await writeIngestSets(work, { files: FILES, pages: PAGES, keys: values.sets.split(',') });
  console.log(
    `bench:vs-platforms — rounds ${ROUNDS}, every variant a fresh process, order alternating; zero-cost dense embedder on every side; ` +
      `load average ${load()} on ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores at the start`,
  );
  if (qdrantUrl) console.log(`Qdrant ${QDRANT_BIN} at ${qdrantUrl} (one node, fresh storage)`);
  for (const set of sets) {
    const list = join(work, 'files.json');
    await writeFile(list, JSON.stringify(set.files));
    const runs = new Map<Side, Run[]>(SIDES.map((s) => [s, []]));
    // A run that fails is reported with its error and left out; the other rounds and sides go on.
    const failures: string[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of r % 2 === 0 ? SIDES : [...SIDES].reverse()) {
        try {
          runs.get(side)!.push(await runOnce(side, list));
        } catch (err) {
          const text = String((err as Error).message ?? err);
          const cause =
            text.match(/\[cause\]: (.*)/)?.[1] ?? text.split('\n').find((l) => /Error/.test(l)) ?? text;
          failures.push(`${LABEL[side]}, round ${r + 1}: ${cause.trim().slice(0, 300)}`);
        }
      }
    }
    for (const side of SIDES) if (runs.get(side)!.length === 0) runs.delete(side);
    console.log(`\n${set.name} (load ${load()})`);
    for (const f of failures) console.log(`  FAILED ${f}`);
    const summary = new Map<Side, { sec: number; cpu: number; rss: number }>();
    // Pages of the set's PDFs, as the Python sides count them (pypdf), for every side's pages/s.
    const setPages = set.pages ?? Math.max(0, ...[...runs.values()].flat().map((x) => x.pages ?? 0));
    for (const side of runs.keys()) {
      const rs = runs.get(side)!;
      const sec = median(rs.map((x) => x.seconds));
      const ownCpu = median(rs.map((x) => x.cpu));
      const qCpu = rs[0]!.qdrantCpu === undefined ? undefined : median(rs.map((x) => x.qdrantCpu!));
      const cpu = ownCpu + (qCpu ?? 0);
      const rss = Math.max(...rs.map((x) => x.peakRss));
      summary.set(side, { sec, cpu, rss });
      const pages = setPages;
      console.log(
        `  ${LABEL[side].padEnd(27)} ${sec.toFixed(2).padStart(7)} s  ${(set.files.length / sec).toFixed(1).padStart(7)} files/s` +
          `${pages ? `  ${(pages / sec).toFixed(1).padStart(6)} pages/s` : ''}  CPU ${cpu.toFixed(2)} s` +
          `${qCpu === undefined ? '' : ` (Qdrant's ${qCpu.toFixed(2)})`}  peak ${mib(rss)}${Number.isNaN(rs[0]!.chunks) ? '' : `  ${rs[0]!.chunks} chunks`}`,
      );
    }
    // Each platform against Kilde on the same store kind: Open WebUI (Chroma) against Kilde → LanceDB,
    // Haystack (Qdrant) against Kilde → Qdrant.
    const against: Array<[Side, Side]> = [
      ['owui', 'kilde'],
      ['owui', 'kilde-put'],
      ['haystack', 'kilde-qdrant'],
      ['haystack', 'kilde-qdrant-put'],
      ['haystack-bulk', 'kilde-qdrant'],
    ];
    for (const [other, kilde] of against) {
      const o = summary.get(other);
      const k = summary.get(kilde);
      if (!o || !k) continue;
      console.log(
        `  ${`${LABEL[other]} / ${LABEL[kilde]}`.padEnd(52)} time ${ratio(o.sec / k.sec)}, CPU ${ratio(o.cpu / k.cpu)}, peak RSS ${(k.rss / o.rss).toFixed(2)} of its`,
      );
    }
    // Where the time goes: each side's stages (median seconds over the rounds).
    for (const side of runs.keys()) {
      const rs = runs.get(side)!;
      const parts: string[] = [];
      if (side === 'kilde-put' || side === 'kilde-qdrant-put') {
        const cpu = median(rs.map((x) => x.cpu));
        const lance = median(rs.map((x) => x.stages?.["LanceDB's threads"] ?? 0));
        const main = median(rs.map((x) => x.stages?.['main process'] ?? 0));
        const ms = (v: number) => `${((v / set.files.length) * 1000).toFixed(1)} ms`;
        parts.push(
          `server CPU a file ${ms(cpu)}: LanceDB's threads ${ms(lance)}, the rest of the main process ${ms(main - lance)}, the workers ${ms(cpu - main)}`,
        );
      } else if (side === 'kilde' || side === 'kilde-qdrant') {
        parts.push(
          `the whole run spawn to exit ${median(rs.map((x) => x.whole?.seconds ?? 0)).toFixed(2)} s, CPU ${median(rs.map((x) => x.whole?.cpu ?? 0)).toFixed(2)} s (main process ${median(rs.map((x) => x.cpuMain ?? 0)).toFixed(2)} s)`,
          `of which its fixed cost (a one-file run) ${median(rs.map((x) => x.fixed?.seconds ?? 0)).toFixed(2)} s, CPU ${median(rs.map((x) => x.fixed?.cpu ?? 0)).toFixed(2)} s, not counted`,
        );
      } else {
        const names = Object.keys(rs[0]!.stages ?? {});
        for (const n of names) parts.push(`${n} ${median(rs.map((x) => x.stages?.[n] ?? 0)).toFixed(2)} s`);
        if (side === 'owui')
          parts.push(
            `(its imports ${median(rs.map((x) => x.importSeconds ?? 0)).toFixed(0)} s, not counted)`,
          );
        else
          parts.push(
            `(its pipeline and collection built in ${median(rs.map((x) => x.startup ?? 0)).toFixed(1)} s, not counted)`,
          );
      }
      console.log(`    ${LABEL[side]}: ${parts.join(', ')}`);
      const q = rs[0]!.qdrantRequests;
      if (q) {
        const total = median(rs.map((x) => x.qdrantTotal ?? 0));
        console.log(
          `    ${LABEL[side]}: Qdrant requests ${total} (${(total / set.files.length).toFixed(2)} a file): ${describeRequests(q, set.files.length, rs[0]!.qdrantMs)} (ms: Qdrant's own answer time, waits included)`,
        );
      }
      const failed = rs[0]!.failed ?? [];
      if (failed.length > 0) {
        console.log(
          `    ${LABEL[side]} failed on ${failed.length} file(s), not counted: ${failed.slice(0, 3).join('; ')}`,
        );
      }
    }
  }
  console.log(`\nload average at the end ${load()}`);
} finally {
  await zero.close();
  await nodes?.close();
  await rm(work, { recursive: true, force: true });
}
