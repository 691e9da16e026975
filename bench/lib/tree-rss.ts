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
