import { type ChildProcess, fork } from 'node:child_process';

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
