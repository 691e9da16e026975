import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/*
 * CPU time of another process, all its threads (Linux /proc/<pid>/stat: utime + stime). On a shared,
 * loaded machine the wall time of a request moves with whatever else runs; the CPU a server spends
 * per request moves much less, so the search benches print both.
 */

let ticks: number | undefined;

/** The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on common Linux systems). */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** Milliseconds of CPU `pid` has used so far; undefined where /proc is not there or it is gone. */
export function cpuMsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces): state first, utime the 12th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}
