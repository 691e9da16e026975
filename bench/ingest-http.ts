/**
 * Many small files over HTTP, end to end: a real `kilde serve ingest` (the built dist/, started by
 * the `kilde` launcher with its memory settings, lexical-only, LanceDB in a temp dir) and the real
 * client `kilde ingest --url` (one ingestion job per file, `--concurrency` in flight), against the
 * same files uploaded with `PUT /api/v1/ingest` (multipart, one request per file, as a chat platform
 * does), and against the same files ingested locally by `kilde ingest` (the embedded index, passes of 128 files). Each
 * SciFact abstract becomes one small .txt file. Prints wall time, files/s, the CPU seconds of the
 * server's process tree (its main process and its extraction workers) and of the client, and the
 * server's peak RSS. Rounds alternate the order. Asserts nothing.
 *
 * The levels include 1: a chat platform's users upload one file at a time, so that is the latency and
 * the server CPU per file (printed in ms) most uploads see.
 *
 * Usage: npm run bench:ingest-http [-- --files 1000 --concurrency 1,8,32 --rounds 2]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { openAsBlob } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchData } from './lib/data.js';
import { rssOf, treeRss } from './lib/tree-rss.js';

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '1,8,32' },
    rounds: { type: 'string', default: '2' },
  },
});
const FILES = Number(values.files);
const LEVELS = values.concurrency.split(',').map(Number);
const ROUNDS = Number(values.rounds);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const LAUNCHER = here('../bin/kilde');
const KEY = 'bench-key-not-served-anywhere';

console.log('building dist/ (tsc -b tsconfig.build.json) ...');
execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
  cwd: here('../'),
  stdio: 'inherit',
});

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-http-'));
// The launcher execs `node` from PATH: this Node (the repository's Node 24 under `npm run`) first.
const env = {
  ...process.env,
  PATH: `${join(process.execPath, '..')}:${process.env.PATH ?? ''}`,
  EMBEDDING_PROVIDER: 'none',
  API_KEY: KEY,
  KILDE_API_KEY: KEY,
  LOG_LEVEL: 'warn',
  LOG_FORMAT: 'json',
};

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
      const tasks = execFileSync('ls', [`/proc/${p}/task`], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean);
      for (const t of tasks) {
        const kids = execFileSync('cat', [`/proc/${p}/task/${t}/children`], { encoding: 'utf8' });
        stack.push(...kids.split(' ').filter(Boolean).map(Number));
      }
    } catch {
      // gone
    }
  }
  return ticks / 100;
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  probe.close();
  return port;
}

/** Runs the launcher to the end; its CPU (user + system, the process and its workers) from /usr/bin/time. */
async function runKilde(
  args: string[],
  extra: Record<string, string>,
): Promise<{ seconds: number; cpu: number }> {
  const t0 = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'kilde-cpu %U %S', LAUNCHER, ...args], {
    env: { ...env, ...extra },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const [code] = (await once(child, 'close')) as [number | null];
  const seconds = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`kilde ${args.join(' ')} failed (${code}):\n${stderr.slice(-2000)}`);
  const m = /kilde-cpu ([\d.]+) ([\d.]+)/.exec(stderr);
  return { seconds, cpu: m ? Number(m[1]) + Number(m[2]) : Number.NaN };
}

/** `PUT /api/v1/ingest` per file, `concurrency` in flight, as a chat platform uploads (multipart). */
async function putAll(
  url: string,
  files: string[],
  concurrency: number,
): Promise<{ seconds: number; cpu: number }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < files.length; i = next++) {
      const path = files[i]!;
      const name = path.split('/').at(-1)!;
      const form = new FormData();
      form.set('file_id', `put-${name}`);
      form.set('collection_name', 'bench');
      form.set('user_id', 'bench');
      form.set('file', await openAsBlob(path), name);
      const res = await fetch(`${url}/api/v1/ingest`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${KEY}` },
        body: form,
      });
      const body = await res.text();
      if (!res.ok) throw new Error(`PUT ${name}: ${res.status} ${body}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const c = process.cpuUsage(c0);
  return { seconds: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6 };
}

async function startServer(
  dataDir: string,
): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const port = await freePort();
  const child = spawn(LAUNCHER, ['serve', 'ingest'], {
    env: { ...env, KILDE_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString('utf8');
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString('utf8');
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`kilde serve exited:\n${output}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 600) throw new Error(`kilde serve did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, child, output: () => output };
}

interface Run {
  seconds: number;
  serverCpu?: number;
  clientCpu: number;
  peakRss?: number;
}

/** A real `kilde serve ingest` taking the files from `client`; its CPU and peak RSS around it. */
async function againstServer(
  client: (url: string, data: string) => Promise<{ seconds: number; cpu: number }>,
): Promise<Run> {
  const data = await mkdtemp(join(work, 'server-'));
  const server = await startServer(data);
  const pid = server.child.pid as number;
  let peak = rssOf(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, treeRss(pid));
  }, 20);
  const before = treeCpu(pid);
  try {
    const run = await client(server.url, data);
    const serverCpu = treeCpu(pid) - before;
    return { seconds: run.seconds, serverCpu, clientCpu: run.cpu, peakRss: peak };
  } finally {
    clearInterval(sampler);
    server.child.kill('SIGTERM');
    await once(server.child, 'exit');
    await rm(data, { recursive: true, force: true });
  }
}

/** `kilde ingest --url`: one ingestion job per file. */
const overJobs = (dir: string, concurrency: number) =>
  againstServer((url, data) =>
    runKilde(['ingest', dir, '-c', 'bench', '--url', url, '--concurrency', String(concurrency)], {
      KILDE_DATA_DIR: join(data, 'client'),
    }),
  );

async function local(dir: string): Promise<Run> {
  const data = await mkdtemp(join(work, 'local-'));
  try {
    const run = await runKilde(['ingest', dir, '-c', 'bench'], { KILDE_DATA_DIR: data });
    return { seconds: run.seconds, clientCpu: run.cpu };
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
  const variants = [
    { name: 'local kilde ingest', run: () => local(dir) },
    ...LEVELS.map((c) => ({ name: `kilde ingest --url, c=${c}`, run: () => overJobs(dir, c) })),
    ...LEVELS.map((c) => ({
      name: `PUT /api/v1/ingest, c=${c}`,
      run: () => againstServer((url) => putAll(url, files, c)),
    })),
  ];
  const runs = new Map<string, Run[]>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) runs.get(v.name)!.push(await v.run());
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
  };
  for (const v of variants) {
    const rs = runs.get(v.name)!;
    const sec = median(rs.map((x) => x.seconds));
    const server =
      rs[0]!.serverCpu === undefined
        ? ''
        : `, server CPU ${median(rs.map((x) => x.serverCpu!)).toFixed(2)} s (${((median(rs.map((x) => x.serverCpu!)) / n) * 1000).toFixed(1)} ms a file)`;
    const rss =
      rs[0]!.peakRss === undefined
        ? ''
        : `, server peak ${(Math.max(...rs.map((x) => x.peakRss!)) / 2 ** 20).toFixed(0)} MiB`;
    console.log(
      `${v.name.padEnd(26)} ${sec.toFixed(2)} s (min ${Math.min(...rs.map((x) => x.seconds)).toFixed(2)}), ${(n / sec).toFixed(0)} files/s; ` +
        `client CPU ${median(rs.map((x) => x.clientCpu)).toFixed(2)} s${server}${rss}`,
    );
  }
  console.log(`load at the end ${load()}`);
} finally {
  await rm(work, { recursive: true, force: true });
}
