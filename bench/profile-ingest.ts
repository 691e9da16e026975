/**
 * Where the CPU of an ingestion goes, process by process: runs the real `kilde` command (bin/kilde over
 * the built dist/, as bench:vs-langchain and bench:vs-platforms run it) under `--cpu-prof` (through
 * NODE_OPTIONS, which the worker pool's processes inherit), and prints for each process (the main one,
 * then each worker) its busy and idle time, the functions and the files with the most self time, and
 * the calls with the most time below them. `--path cli` (default) profiles a local `kilde ingest` of
 * the set; `--path put` a `kilde serve ingest` taking one `PUT /api/v1/ingest` per file, one at a time
 * (its profile starts with the server's start-up, printed apart in the figures). `--qdrant` writes
 * into a real Qdrant started from QDRANT_BIN (default /work/qdrant-src/v1.18.3/target/perf/qdrant,
 * dense vectors from a zero-cost endpoint and BM25 sparse vectors, as bench:vs-platforms's Kilde →
 * Qdrant sides) and prints Qdrant's CPU and its requests by kind. Profiling adds its own cost (about a
 * third more CPU), so compare profiles with profiles. A profile's times are the wall time between
 * samples: on a loaded machine a process's waits for a core are charged to whatever it was running, so
 * read the shares on a quiet machine and the CPU seconds on a busy one (the load average is printed).
 * Asserts nothing.
 *
 * Usage: npm run build && npx tsx bench/profile-ingest.ts [--set small|mixed|pdf --files 1000 --top 25
 *        --path cli|put --qdrant]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startQdrantNodes } from '../test/live/qdrant-nodes.js';
import { writeIngestSets } from './lib/ingest-sets.js';
import { kildeCli, zeroCostEmbeddingEnv } from './lib/kilde-cli.js';
import { overPut } from './lib/kilde-http.js';
import { describeRequests, qdrantMark, qdrantSince } from './lib/qdrant-meter.js';
import { serveZeroCostEmbeddings } from './lib/zero-cost.js';

const { values } = parseArgs({
  options: {
    set: { type: 'string', default: 'small' },
    files: { type: 'string', default: '1000' },
    top: { type: 'string', default: '25' },
    path: { type: 'string', default: 'cli' },
    qdrant: { type: 'boolean', default: false },
  },
});
const TOP = Number(values.top);
const QDRANT_BIN = process.env.QDRANT_BIN ?? '/work/qdrant-src/v1.18.3/target/perf/qdrant';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
const where = (f: ProfileNode['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|dist|bench)\//, '$1/')}:${f.lineNumber + 1}`;

function summarise(file: string, role: string): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const fn = new Map<string, number>();
  const byFile = new Map<string, number>();
  const below = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, t] of self) {
    const frame = byId.get(id)!.callFrame;
    total += t;
    if (frame.functionName === '(idle)') {
      idle += t;
      continue;
    }
    fn.set(where(frame), (fn.get(where(frame)) ?? 0) + t);
    const f = frame.url ? frame.url.replace(/^.*\/(node_modules|dist|bench)\//, '$1/') : frame.functionName;
    byFile.set(f, (byFile.get(f) ?? 0) + t);
    // Time below each call, a name counted once per stack (recursion).
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = where(byId.get(cur)!.callFrame);
      if (seen.has(k) || k.startsWith('(root)')) continue;
      seen.add(k);
      below.set(k, (below.get(k) ?? 0) + t);
    }
  }
  const top = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([k, t]) => `  ${ms(t)}  ${k}`)
      .join('\n');
  console.log(`\n${role} (${file.split('/').at(-1)}): ${ms(total - idle)} busy, ${ms(idle)} idle`);
  console.log(`self time by function:\n${top(fn)}`);
  console.log(`self time by file:\n${top(byFile)}`);
  console.log(`time below a call:\n${top(below)}`);
}

const work = await mkdtemp(join(tmpdir(), 'kilde-profile-'));
const nodes = values.qdrant ? await startQdrantNodes(QDRANT_BIN, 1) : undefined;
const zero = await serveZeroCostEmbeddings(384);
try {
  const [set] = await writeIngestSets(work, {
    files: Number(values.files),
    pages: 300,
    keys: [values.set ?? 'small'],
  });
  const files = set!.files;
  const profiles = join(work, 'profiles');
  const env: Record<string, string> = {
    NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profiles}`,
    ...(nodes
      ? {
          ...zeroCostEmbeddingEnv(zero.url),
          VECTORDB_URI: nodes.urls[0]!,
          VECTORDB_INDEX: 'profile',
          ENABLE_SPARSE_EMBEDDINGS: 'true',
        }
      : {}),
  };
  const qdrantPid = nodes?.nodes[0]?.process?.pid;
  const mark = nodes ? await qdrantMark(nodes.urls[0]!, qdrantPid) : undefined;
  const run =
    values.path === 'put'
      ? await overPut(work, files, 1, env)
      : await kildeCli(work, files, {
          chunkTokens: 400,
          overlapTokens: 80,
          env,
          launcher: await profiledLauncher(work, profiles),
        });
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
  const { seconds, cpu, peakRss } = run;
  console.log(
    `set ${values.set} (${files.length} files), path ${values.path}${nodes ? ' into Qdrant' : ''}, load ${load}; the run (profiled): ${JSON.stringify({ seconds, cpu, peakRss })}`,
  );
  if (nodes && mark) {
    const cost = await qdrantSince(nodes.urls[0]!, qdrantPid, mark);
    console.log(
      `Qdrant: CPU ${cost.cpu.toFixed(2)} s, ${cost.total} requests (the collection's creation included): ${describeRequests(cost.requests, files.length, cost.ms)}`,
    );
  }
  // The main process's profile first (the lowest pid: it starts its workers), then the workers'.
  const pidOf = (f: string) => Number(f.split('.')[2]);
  const written = readdirSync(profiles).sort((a, b) => pidOf(a) - pidOf(b));
  written.forEach((f, i) => {
    summarise(join(profiles, f), i === 0 ? 'main process' : 'pool worker');
  });
} finally {
  await zero.close();
  await nodes?.close();
  await rm(work, { recursive: true, force: true });
}

/**
 * bin/kilde with `--cpu-prof` on Node's command line as well as in NODE_OPTIONS: the worker pool
 * passes its parent's command-line flags on (src/pool/pool-process.ts), and a worker started with
 * them writes its profile when the pool's SIGTERM ends it (src/pool/worker-runtime.ts); a worker
 * profiled through NODE_OPTIONS alone is killed before it writes one.
 */
async function profiledLauncher(dir: string, profiles: string): Promise<string> {
  const launcher = join(dir, 'kilde-profiled');
  const bin = fileURLToPath(new URL('../bin/kilde', import.meta.url));
  const script = readFileSync(bin, 'utf8').replace(
    'exec node "$(dirname "$(readlink -f "$0")")/kilde.js" "$@"',
    `exec node --cpu-prof --cpu-prof-dir=${profiles} ${bin}.js "$@"`,
  );
  if (!script.includes('--cpu-prof')) throw new Error('bin/kilde no longer ends as this bench expects');
  await writeFile(launcher, script);
  await chmod(launcher, 0o755);
  return launcher;
}
