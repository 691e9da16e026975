/**
 * Where the per-upload index work goes: a real `kilde serve ingest` (the built dist/, lexical-only,
 * LanceDB in a temp dir) takes small files one `PUT /api/v1/ingest` each, `--concurrency` in flight
 * (1 is how a chat platform's user uploads), and the bench counts the LanceDB table versions the
 * uploads made (the table's version number before the first upload and after the server stopped:
 * every commit is a version, optimizes included) and the server's CPU per file (its whole process
 * tree, /proc). Then the same files through `kilde ingest --url` (the jobs API) and the local
 * `kilde ingest`, their versions too, and the bulk-over-HTTP / local ratio of files/s and of CPU.
 * Levels and variants alternate order between rounds. Asserts nothing.
 *
 * Usage: npx tsx bench/ingest-commits.ts [--files 1000 --concurrency 1,4 --rounds 1 --skip-bulk]
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connect } from '@lancedb/lancedb';
import { benchData } from './lib/data.js';
import { kildeEnv, putAll, startServer } from './lib/kilde-http.js';

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '1,4' },
    rounds: { type: 'string', default: '1' },
    'skip-bulk': { type: 'boolean', default: false },
    /** `kilde ingest --url --concurrency`; unset: the command's default. */
    'url-concurrency': { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
});
const FILES = Number(values.files);
const LEVELS = values.concurrency.split(',').map(Number);
const ROUNDS = Number(values.rounds);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const LAUNCHER = here('../bin/kilde');
const TABLE = 'ingestion_files';

if (!values['no-build']) {
  console.log('building dist/ (tsc -b tsconfig.build.json) ...');
  execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
    cwd: here('../'),
    stdio: 'inherit',
  });
}

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-commits-'));
const env = kildeEnv();

/** CPU seconds (user + system) of `pid` and every live process below it. */
function treeCpu(pid: number): number {
  let ticks = 0;
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop() as number;
    try {
      const stat = execFileSync('cat', [`/proc/${p}/stat`], { encoding: 'utf8' });
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      for (const t of execFileSync('ls', [`/proc/${p}/task`], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)) {
        const kids = execFileSync('cat', [`/proc/${p}/task/${t}/children`], { encoding: 'utf8' });
        stack.push(...kids.split(' ').filter(Boolean).map(Number));
      }
    } catch {
      // gone
    }
  }
  return ticks / 100;
}

/** The table's version number (0: no table yet). */
async function tableVersion(dataDir: string): Promise<number> {
  const db = await connect(join(dataDir, 'lancedb'));
  try {
    if (!(await db.tableNames()).includes(TABLE)) return 0;
    const table = await db.openTable(TABLE);
    const v = await table.version();
    table.close();
    return v;
  } finally {
    db.close();
  }
}

/** CPU seconds of the last `kilde ingest --url` client run. */
let lastClientCpu = 0;

async function runKilde(args: string[], extra: Record<string, string>): Promise<number> {
  const child = spawn('/usr/bin/time', ['-f', 'kilde-cpu %U %S', LAUNCHER, ...args], {
    env: { ...env, ...extra },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`kilde ${args.join(' ')} failed (${code}):\n${stderr.slice(-2000)}`);
  const m = /kilde-cpu ([\d.]+) ([\d.]+)/.exec(stderr);
  lastClientCpu = m ? Number(m[1]) + Number(m[2]) : Number.NaN;
  return lastClientCpu;
}

interface Run {
  seconds: number;
  /** CPU seconds: the server's tree (HTTP) or the CLI's (local). */
  cpu: number;
  versions: number;
  /** `kilde ingest --url`: the client's CPU seconds. */
  clientCpu?: number;
}

async function overHttp(client: (url: string, data: string) => Promise<void>): Promise<Run> {
  const data = await mkdtemp(join(work, 'server-'));
  const server = await startServer(data, {});
  const pid = server.child.pid as number;
  try {
    const v0 = await tableVersion(data);
    const c0 = treeCpu(pid);
    const t0 = performance.now();
    await client(server.url, data);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = treeCpu(pid) - c0;
    server.child.kill('SIGTERM');
    await once(server.child, 'exit');
    return { seconds, cpu, versions: (await tableVersion(data)) - v0 };
  } finally {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
    await rm(data, { recursive: true, force: true });
  }
}

async function local(dir: string): Promise<Run> {
  const data = await mkdtemp(join(work, 'local-'));
  try {
    const t0 = performance.now();
    const cpu = await runKilde(['ingest', dir, '-c', 'bench'], { KILDE_DATA_DIR: data });
    return { seconds: (performance.now() - t0) / 1000, cpu, versions: await tableVersion(data) };
  } finally {
    await rm(data, { recursive: true, force: true });
  }
}

try {
  const dir = join(work, 'files');
  await mkdir(dir);
  let n = 0;
  for (const line of (await readFile(benchData('scifact', 'corpus.jsonl'), 'utf8')).split('\n')) {
    if (n >= FILES || line.trim() === '') continue;
    const row = JSON.parse(line) as { _id: string; title: string; text: string };
    await writeFile(join(dir, `${row._id}.txt`), `${row.title}\n\n${row.text}\n`);
    n += 1;
  }
  const load = () => execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0];
  console.log(`${n} SciFact abstracts as .txt files, rounds ${ROUNDS}, load ${load()}`);
  const files = (await readdir(dir)).map((f) => join(dir, f));
  const variants: Array<{ name: string; run: () => Promise<Run> }> = [
    ...LEVELS.map((c) => ({
      name: `PUT /api/v1/ingest, c=${c}`,
      run: () => overHttp(async (url) => void (await putAll(url, files, c))),
    })),
  ];
  if (!values['skip-bulk']) {
    variants.push(
      { name: 'local kilde ingest', run: () => local(dir) },
      {
        name: 'kilde ingest --url',
        run: async () => ({
          ...(await overHttp(async (url, data) => {
            const c = values['url-concurrency'];
            await runKilde(['ingest', dir, '-c', 'bench', '--url', url, ...(c ? ['--concurrency', c] : [])], {
              KILDE_DATA_DIR: join(data, 'client'),
            });
          })),
          clientCpu: lastClientCpu,
        }),
      },
    );
  }
  const runs = new Map<string, Run[]>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      const run = await v.run();
      runs.get(v.name)!.push(run);
      console.log(
        `  ${v.name}: ${run.seconds.toFixed(2)} s, ${(n / run.seconds).toFixed(0)} files/s, CPU ${run.cpu.toFixed(2)} s (${((run.cpu / n) * 1000).toFixed(1)} ms a file), ${run.versions} table versions${run.clientCpu === undefined ? '' : `, client CPU ${run.clientCpu.toFixed(2)} s`}, load ${load()}`,
      );
    }
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
  };
  console.log('\nmedians:');
  for (const v of variants) {
    const rs = runs.get(v.name)!;
    const sec = median(rs.map((x) => x.seconds));
    const cpu = median(rs.map((x) => x.cpu));
    const versions = median(rs.map((x) => x.versions));
    console.log(
      `${v.name.padEnd(28)} ${(n / sec).toFixed(0).padStart(5)} files/s  CPU ${((cpu / n) * 1000).toFixed(1).padStart(5)} ms a file  ${String(versions).padStart(5)} table versions (${((versions / n) * 1000).toFixed(0)} per 1,000 files)`,
    );
  }
  const lo = runs.get('local kilde ingest');
  const bulk = runs.get('kilde ingest --url');
  if (lo && bulk) {
    const ratio = median(lo.map((x) => x.seconds)) / median(bulk.map((x) => x.seconds));
    console.log(`kilde ingest --url / local kilde ingest: ${ratio.toFixed(2)}× the files/s`);
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
