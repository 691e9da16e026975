/**
 * Where the CPU of a local ingestion goes, process by process: runs Kilde's side of
 * `npm run bench:vs-langchain` (bench/vs-langchain-kilde.ts over the built dist/, the `kilde`
 * launcher's memory settings and compile cache) once under `node --cpu-prof`, which the worker pool
 * passes on to its workers, and prints for each process (the main one, then each worker) its busy
 * and idle time, the functions and the files with the most self time, and the calls with the most
 * time below them. Profiling adds its own cost (about a third more CPU), so compare profiles with
 * profiles; the bench's own figures (CPU, peak RSS) are printed too. A profile's times are the wall
 * time between samples: on a loaded machine a process's waits for a core are charged to whatever
 * it was running, so read the shares on a quiet machine and the CPU seconds on a busy one (the load
 * average is printed). Asserts nothing.
 *
 * Usage: npm run build && npx tsx bench/profile-ingest.ts [--set small|mixed|pdf --files 1000 --top 25]
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
    set: { type: 'string', default: 'small' },
    files: { type: 'string', default: '1000' },
    top: { type: 'string', default: '25' },
  },
});
const TOP = Number(values.top);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

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

/** The files of one set, as bench:vs-langchain writes them. */
async function setFiles(work: string): Promise<string[]> {
  if (values.set === 'small') {
    const dir = join(work, 'small');
    await mkdir(dir);
    const files: string[] = [];
    for (const line of (await readFile(benchData('scifact', 'corpus.jsonl'), 'utf8')).split('\n')) {
      if (files.length >= Number(values.files) || line.trim() === '') continue;
      const row = JSON.parse(line) as { _id: string; title: string; text: string };
      const path = join(dir, `${row._id}.txt`);
      await writeFile(path, `${row.title}\n\n${row.text}\n`);
      files.push(path);
    }
    return files;
  }
  if (values.set === 'mixed') {
    const danish = benchData('da-citizenship', 'corpus');
    return [
      ...readdirSync(FIXTURE_DOCUMENTS)
        .filter((f) => /\.(pdf|docx)$/.test(f))
        .map((f) => join(FIXTURE_DOCUMENTS, f)),
      ...readdirSync(danish)
        .filter((f) => f.endsWith('.md'))
        .map((f) => join(danish, f)),
    ];
  }
  const pdf = join(work, 'large.pdf');
  await writeFile(pdf, writeTextPdf(300, 45));
  return [pdf];
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
try {
  const list = join(work, 'files.json');
  const files = await setFiles(work);
  await writeFile(list, JSON.stringify(files));
  const profiles = join(work, 'profiles');
  const cache = compileCacheDir(process.env);
  const res = spawnSync(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${profiles}`,
      '--disable-warning=ExperimentalWarning',
      '--import',
      here('./lib/use-dist.mjs'),
      here('./vs-langchain-kilde.ts'),
      list,
      join(work, 'index'),
      '400',
      '80',
    ],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        GLIBC_TUNABLES: withMallocTunables(process.env.GLIBC_TUNABLES),
        NODE_OPTIONS: withYoungGenerationFlag(process.env.NODE_OPTIONS),
        ...(cache ? { NODE_COMPILE_CACHE: cache } : {}),
      },
    },
  );
  if (res.status !== 0)
    throw new Error(`the profiled run failed (exit ${res.status}): ${res.stderr.slice(-2000)}`);
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
  console.log(
    `set ${values.set} (${files.length} files), load ${load}; the run (profiled): ${res.stdout.trim().split('\n').at(-1)}`,
  );
  // The main process's profile first (its pid is in the file name), then the workers'.
  const main = `.${res.pid}.`;
  const written = readdirSync(profiles).sort((a, b) => Number(b.includes(main)) - Number(a.includes(main)));
  for (const f of written) summarise(join(profiles, f), f.includes(main) ? 'main process' : 'pool worker');
} finally {
  await rm(work, { recursive: true, force: true });
}
