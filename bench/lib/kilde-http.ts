import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { openAsBlob, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lanceVersions } from './lance-versions.js';
import { cpuMsOf } from './proc-cpu.js';
import { treeRss } from './tree-rss.js';

/*
 * Kilde's ingestion paths over HTTP and the local CLI, each a real process of the built dist/
 * started by the `kilde` launcher (bin/kilde, its memory settings), for bench:ingest-http and
 * bench:vs-langchain: `PUT /api/v1/ingest` per file against `kilde serve ingest` (as a chat platform
 * uploads), `kilde ingest --url` (one ingestion job per file) and the local `kilde ingest`. Each run
 * reports wall seconds, the CPU of the server's process tree (or the CLI's) and of LanceDB's threads
 * in it, the peak RSS of the tree and the LanceDB table versions the run made.
 */

const LAUNCHER = fileURLToPath(new URL('../../bin/kilde', import.meta.url));
export const BENCH_KEY = 'bench-key-not-served-anywhere';
const TICKS = 100;

/**
 * The environment every Kilde process of these benches gets: lexical-only, JSON logs at each command's
 * own default level (the CLI's `error`; servers get `LOG_LEVEL_APP=warn` in `startServer`).
 */
export function kildeEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // The launcher execs `node` from PATH: this Node (the repository's Node 24 under `npm run`) first.
    PATH: `${join(process.execPath, '..')}:${process.env.PATH ?? ''}`,
    EMBEDDING_PROVIDER: 'none',
    API_KEY: BENCH_KEY,
    KILDE_API_KEY: BENCH_KEY,
    LOG_FORMAT: 'json',
  };
}

function statFields(path: string): { comm: string; f: string[] } | undefined {
  try {
    const st = readFileSync(path, 'utf8');
    return {
      comm: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')),
      f: st.slice(st.lastIndexOf(')') + 2).split(' '),
    };
  } catch {
    return undefined;
  }
}

function children(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) => {
      try {
        return readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

/** CPU seconds (user + system) of `pid` and every live process below it, with their exited children. */
export function treeCpu(pid: number): number {
  let ticks = 0;
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop() as number;
    const s = statFields(`/proc/${p}/stat`);
    if (s) ticks += Number(s.f[11]) + Number(s.f[12]) + Number(s.f[13]) + Number(s.f[14]);
    stack.push(...children(p));
  }
  return ticks / TICKS;
}

/** LanceDB's threads in `pid` (its tokio runtime and its CPU pool: `tokio-rt-worker`, `lance-*`). */
const isLanceThread = (comm: string) => comm.startsWith('tokio') || comm.startsWith('lance');

/**
 * Watches `pid`'s threads every 50 ms, keeping each thread's last CPU reading, so the CPU of
 * LanceDB's threads is known even after the process exits (up to 50 ms of it may be missed).
 * `stop()` answers the CPU seconds LanceDB's threads used since the watch began.
 */
export function watchLanceCpu(pid: number): { stop: () => number } {
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  const sample = () => {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      return;
    }
    for (const tid of tids) {
      const s = statFields(`/proc/${pid}/task/${tid}/stat`);
      if (!s || !isLanceThread(s.comm)) continue;
      const cpu = Number(s.f[11]) + Number(s.f[12]);
      if (!first.has(tid)) first.set(tid, cpu);
      last.set(tid, cpu);
    }
  };
  sample();
  // Threads seen at the start count from there; threads born later count from zero.
  const born = new Set(first.keys());
  const timer = setInterval(sample, 50);
  return {
    stop: () => {
      sample();
      clearInterval(timer);
      let ticks = 0;
      for (const [tid, cpu] of last) ticks += cpu - (born.has(tid) ? (first.get(tid) ?? 0) : 0);
      return ticks / TICKS;
    },
  };
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  probe.close();
  return port;
}

export interface HttpRun {
  seconds: number;
  /** CPU seconds of the server's process tree (or the local CLI's, workers included). */
  cpu: number;
  /** Of which LanceDB's threads, and the server's main process (all its threads, LanceDB's included; the rest is its workers). */
  lanceCpu: number;
  mainCpu?: number;
  clientCpu: number;
  peakRss: number;
  /** LanceDB table versions the run made (every table in the data dir). */
  versions: number;
}

/** Runs the launcher to the end; CPU of it and its workers from /usr/bin/time, LanceDB's from its threads. */
async function runKilde(
  args: string[],
  extra: Record<string, string>,
): Promise<{ seconds: number; cpu: number; lanceCpu: number; peakRss: number }> {
  const t0 = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'kilde-cpu %U %S', LAUNCHER, ...args], {
    env: { ...kildeEnv(), ...extra },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  // The launcher execs node, so the process /usr/bin/time starts is Kilde's.
  let pid: number | undefined;
  for (let i = 0; i < 400 && pid === undefined && child.exitCode === null; i++) {
    pid = children(child.pid as number)[0];
    if (pid === undefined) await new Promise((r) => setTimeout(r, 5));
  }
  const lance = pid === undefined ? undefined : watchLanceCpu(pid);
  let peak = 0;
  const sampler = setInterval(() => {
    if (pid !== undefined) peak = Math.max(peak, treeRss(pid));
  }, 20);
  const [code] = (await once(child, 'close')) as [number | null];
  clearInterval(sampler);
  const lanceCpu = lance?.stop() ?? Number.NaN;
  const seconds = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`kilde ${args.join(' ')} failed (${code}):\n${stderr.slice(-2000)}`);
  const m = /kilde-cpu ([\d.]+) ([\d.]+)/.exec(stderr);
  return { seconds, cpu: m ? Number(m[1]) + Number(m[2]) : Number.NaN, lanceCpu, peakRss: peak };
}

/** One `PUT /api/v1/ingest` of the file at `path` under `fileId`, as a chat platform uploads it (multipart). */
export async function putFile(url: string, path: string, fileId: string): Promise<void> {
  const name = path.split('/').at(-1)!;
  const form = new FormData();
  form.set('file_id', fileId);
  form.set('collection_name', 'bench');
  form.set('user_id', 'bench');
  form.set('file', await openAsBlob(path), name);
  const res = await fetch(`${url}/api/v1/ingest`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${BENCH_KEY}` },
    body: form,
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`PUT ${name}: ${res.status} ${body}`);
}

/** `PUT /api/v1/ingest` per file, `concurrency` in flight, as a chat platform uploads (multipart). */
export async function putAll(
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
      await putFile(url, path, `put-${i}-${path.split('/').at(-1)!}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const c = process.cpuUsage(c0);
  return { seconds: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6 };
}

/** A real `kilde serve ingest` on a free port over `dataDir`, once its `/health` answers. */
export async function startServer(
  dataDir: string,
  extra: Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(LAUNCHER, ['serve', 'ingest'], {
    // Warnings and errors only (no line per request), as an operator quiets a busy ingest server.
    env: {
      ...kildeEnv(),
      LOG_LEVEL_APP: 'warn',
      KILDE_DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`kilde serve exited:\n${output}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 1200) throw new Error(`kilde serve did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, child };
}

/** A real `kilde serve ingest` taking the files from `client`; its CPU, LanceDB's and peak RSS around it. */
async function againstServer(
  work: string,
  client: (url: string, data: string) => Promise<{ seconds: number; cpu: number }>,
  extra: Record<string, string> = {},
): Promise<HttpRun> {
  const data = await mkdtemp(join(work, 'server-'));
  const server = await startServer(data, extra);
  const pid = server.child.pid as number;
  let peak = treeRss(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, treeRss(pid));
  }, 20);
  const before = treeCpu(pid);
  const mainBefore = cpuMsOf(pid) ?? 0;
  const lance = watchLanceCpu(pid);
  try {
    const run = await client(server.url, data);
    const cpu = treeCpu(pid) - before;
    const mainCpu = ((cpuMsOf(pid) ?? 0) - mainBefore) / 1000;
    const lanceCpu = lance.stop();
    clearInterval(sampler);
    server.child.kill('SIGTERM');
    await once(server.child, 'exit');
    const { versions } = await lanceVersions(data);
    return { seconds: run.seconds, cpu, lanceCpu, mainCpu, clientCpu: run.cpu, peakRss: peak, versions };
  } finally {
    clearInterval(sampler);
    if (server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    }
    await rm(data, { recursive: true, force: true });
  }
}

/**
 * One `PUT /api/v1/ingest` per file against a fresh server, `concurrency` in flight; `extra` is the
 * server's environment on top (bench:vs-platforms points it at a Qdrant: `VECTORDB_URI`, ...).
 */
export const overPut = (
  work: string,
  files: string[],
  concurrency: number,
  extra: Record<string, string> = {},
) => againstServer(work, (url) => putAll(url, files, concurrency), extra);

/** `kilde ingest --url`: the real client, one ingestion job per file, against a fresh server. */
export const overJobs = (work: string, dir: string, concurrency: number) =>
  againstServer(work, async (url, data) => {
    const run = await runKilde(
      ['ingest', dir, '-c', 'bench', '--url', url, '--concurrency', String(concurrency)],
      {
        KILDE_DATA_DIR: join(data, 'client'),
      },
    );
    return { seconds: run.seconds, cpu: run.cpu };
  });

/** The local `kilde ingest` of `dir` into a fresh embedded index. */
export async function local(work: string, dir: string): Promise<HttpRun> {
  const data = await mkdtemp(join(work, 'local-'));
  try {
    const run = await runKilde(['ingest', dir, '-c', 'bench'], { KILDE_DATA_DIR: data });
    const { versions } = await lanceVersions(data);
    return { ...run, clientCpu: run.cpu, versions };
  } finally {
    await rm(data, { recursive: true, force: true });
  }
}
