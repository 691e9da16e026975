import { readdirSync, readFileSync } from 'node:fs';

/*
 * The resident memory of a process *and its descendants* (Linux /proc): Kilde's extraction,
 * chunking and BM25 run in worker processes, so a peak taken of `process.memoryUsage.rss()` alone
 * would leave them out. Falls back to this process's own RSS where /proc is not there.
 */

function children(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** Bytes resident in one process (0 when it is gone). */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Bytes resident in `pid` (default: this process) and every process below it. */
export function treeRss(pid = process.pid): number {
  if (pid === process.pid && rssOf(pid) === 0) return process.memoryUsage.rss();
  let total = 0;
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop() as number;
    total += rssOf(p);
    stack.push(...children(p));
  }
  return total;
}

/**
 * CPU seconds (user + system) this process has used since it started, and its children that have
 * exited (Kilde's pool workers, once the pool is closed): /proc/self/stat's utime, stime, cutime and
 * cstime. Falls back to this process alone where /proc is not there.
 */
export function cpuSeconds(): number {
  try {
    // Fields after the command name (which may hold spaces): state is field 3, utime field 14.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((s, i) => s + Number(f[i]), 0);
    return ticks / 100;
  } catch {
    const r = process.resourceUsage();
    return (r.userCPUTime + r.systemCPUTime) / 1e6;
  }
}
