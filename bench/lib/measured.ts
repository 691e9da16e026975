import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { cpuMsOf } from './proc-cpu.js';
import { rssOf } from './tree-rss.js';

/*
 * One command measured from outside, as a user experiences it: wall time from the spawn to the exit
 * (Node's start and module loading included), the CPU of its whole process tree (`/usr/bin/time`:
 * the rusage of the process and of every descendant it waited for), the peak RSS of the tree
 * (sampled every 10 ms, the process and its direct children) and of its main process and largest
 * child, and the main process's own CPU (its last reading before it exited). The sampler runs in
 * this process, so nothing it costs is charged to the command.
 */

export interface Measured {
  seconds: number;
  /** CPU seconds (user + system) of the whole tree. */
  cpu: number;
  /** CPU seconds of the main process alone, all its threads (read up to 10 ms before it exited). */
  cpuMain: number;
  peakRss: number;
  peakMain: number;
  /** The largest child process's peak RSS (Kilde's extraction workers); 0 without children. */
  peakChild: number;
  stdout: string;
  stderr: string;
}

/** The children of `pid`'s main thread: the processes it forked (Node forks from its main thread). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Runs `command args` to its end under `/usr/bin/time`; throws with its stderr's tail on a non-zero exit. */
export async function runMeasured(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<Measured> {
  const t0 = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'measured-cpu %U %S %M', command, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-64_000);
  });
  // /usr/bin/time's one child is the command (a launcher script execs node in place).
  let pid: number | undefined;
  let peakRss = 0;
  let peakMain = 0;
  let peakChild = 0;
  let cpuMain = 0;
  const sample = () => {
    pid ??= childrenOf(child.pid as number)[0];
    if (pid === undefined) return;
    const main = rssOf(pid);
    let sum = main;
    for (const c of childrenOf(pid)) {
      const rss = rssOf(c);
      sum += rss;
      peakChild = Math.max(peakChild, rss);
    }
    peakMain = Math.max(peakMain, main);
    peakRss = Math.max(peakRss, sum);
    cpuMain = Math.max(cpuMain, (cpuMsOf(pid) ?? 0) / 1000);
  };
  const sampler = setInterval(sample, 10);
  const [code] = (await once(child, 'close')) as [number | null];
  clearInterval(sampler);
  const seconds = (performance.now() - t0) / 1000;
  const m = /measured-cpu ([\d.]+) ([\d.]+) (\d+)/.exec(stderr);
  if (code !== 0 || !m) {
    throw new Error(
      `${command} ${args.slice(0, 3).join(' ')} … failed (exit ${code}):\n${stderr.slice(-2000)}`,
    );
  }
  // The largest single process's own high-water mark (%M, KiB) bounds the sampled peaks from below.
  const maxOne = Number(m[3]) * 1024;
  return {
    seconds,
    cpu: Number(m[1]) + Number(m[2]),
    cpuMain,
    peakRss: Math.max(peakRss, maxOne),
    peakMain,
    peakChild,
    stdout,
    stderr: stderr.replace(/measured-cpu .*\n?$/, ''),
  };
}
