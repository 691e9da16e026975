import { type ChildProcess, fork } from 'node:child_process';
import type { ToWorker } from './protocol.js';

/*
 * A pool worker as an operating-system process (worker-pool.ts schedules them). From `src/` (tests,
 * tsx) the worker entry is TypeScript and needs tsx's loader; from `dist/` it is plain JavaScript.
 */

/** The worker entry `name` (without extension) beside the module at `base` (its `import.meta.url`). */
export function workerEntry(base: string, name: string): URL {
  return new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
}
/**
 * A parent started with `--cpu-prof` (and its `--cpu-prof-dir`, `--cpu-prof-interval`) profiles its
 * workers too: each writes its own profile, under its own default name, when it exits
 * (docs/performance.md, "Profile").
 */
const PROFILE_FLAGS = profileFlags(process.execArgv);

/**
 * The `--cpu-prof` flags of `execArgv` for a worker, each with its value, given as `--flag=v` or as
 * `--flag v`. Not `--cpu-prof-name`: every worker would write its profile over the same file.
 */
export function profileFlags(execArgv: readonly string[]): string[] {
  const flags: string[] = [];
  execArgv.forEach((a, i) => {
    if (!/^--cpu-prof(?:$|-)/.test(a)) return;
    const withValue = a !== '--cpu-prof' && !a.includes('=');
    if (a.startsWith('--cpu-prof-name')) return;
    flags.push(a);
    const value = execArgv[i + 1];
    if (withValue && value !== undefined) flags.push(value);
  });
  return flags;
}

/**
 * Starts a worker process with a hard V8 heap limit, structured-clone IPC and its stderr piped (for
 * V8's out-of-memory report). It inherits this process's environment: the memory settings and the
 * compile cache (src/cli/process-memory.ts, src/cli/compile-cache.ts).
 */
export function forkWorker(entry: URL, heapMb: number): ChildProcess {
  const early = takeEarly(entry, heapMb);
  if (early) return early;
  return fork(entry, [], {
    execArgv: [
      ...(entry.pathname.endsWith('.ts') ? ['--import', 'tsx/esm'] : []),
      `--max-old-space-size=${heapMb}`,
      ...PROFILE_FLAGS,
    ],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}

/** A busy worker keeps this process alive (its caller waits on it); an idle one does not. */
export function hold(child: ChildProcess, busy: boolean): void {
  const channel = child.channel as { ref?(): void; unref?(): void } | null | undefined;
  const stderr = child.stderr as { ref?(): void; unref?(): void } | null;
  if (busy) {
    child.ref();
    channel?.ref?.();
    stderr?.ref?.();
  } else {
    child.unref();
    channel?.unref?.();
    stderr?.unref?.();
  }
}

/** A worker started before its pool existed (`startEarly`), for the first `forkWorker` of its kind. */
let earlyWorker: { key: string; child: ChildProcess } | undefined;

/**
 * Starts a worker of `entry` now, before the pool that will run it is built, so that its start (Node
 * and its modules, ≈ 85 ms of CPU and more of time) overlaps the starting process's own: `kilde
 * ingest` calls it before it walks its files, opens the index and builds the pipeline. The first
 * `forkWorker` of the same entry and heap limit takes it instead of starting one; one that no pool
 * takes holds nothing (it ends when this process does: its IPC channel closes). Returns its process
 * id (undefined when one is already waiting).
 */
export function startEarly(entry: URL, heapMb: number): number | undefined {
  if (earlyWorker) return undefined;
  const child = forkWorker(entry, heapMb);
  // Until a pool takes it: a failed start is the pool's to see (it checks the process is alive).
  child.once('error', () => undefined);
  hold(child, false);
  earlyWorker = { key: `${entry.href} ${heapMb}`, child };
  return child.pid;
}

/**
 * Has the early worker, before a pool takes it, load what its first tasks will need (the pool's
 * `preload`: PDFium for the extraction pool's workers), as a kept worker does at its start.
 */
export function preloadEarly(): void {
  const child = earlyWorker?.child;
  if (child?.connected) child.send({ type: 'preload' } satisfies ToWorker);
}

/** The early worker when it matches and is alive; one that does not match is stopped. */
function takeEarly(entry: URL, heapMb: number): ChildProcess | undefined {
  const early = earlyWorker;
  if (!early) return undefined;
  earlyWorker = undefined;
  const alive = early.child.connected && early.child.exitCode === null && early.child.signalCode === null;
  if (alive && early.key === `${entry.href} ${heapMb}`) return early.child;
  if (alive) early.child.kill('SIGTERM');
  return undefined;
}
