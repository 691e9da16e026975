import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';

/**
 * Uploads and downloaded objects land in `$TMPDIR/kilde-uploads/<pid>-<random>/`, one folder per
 * request, removed when the request ends. A crash skips that clean-up; the process id in the name
 * lets the next start-up tell its predecessors' folders from those of other live processes.
 */
export function uploadsRoot(): string {
  return join(tmpdir(), 'kilde-uploads');
}

/** Folders of requests in flight in this process (the sweep skips them). */
const inUse = new Set<string>();

/** The uploads root this process has made (once, not per request), or undefined. */
let made: string | undefined;

/** A new folder under the uploads root; the root is made on first use, and again if it went away. */
async function newRequestDir(): Promise<string> {
  const root = uploadsRoot();
  if (made !== root) {
    await mkdir(root, { recursive: true });
    made = root;
  }
  try {
    return await mkdtemp(join(root, `${process.pid}-`));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(root, { recursive: true });
    return mkdtemp(join(root, `${process.pid}-`));
  }
}

/** Runs `fn` with a private temporary directory that is removed afterwards, whatever happens. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await newRequestDir();
  inUse.add(dir);
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
    inUse.delete(dir);
  }
}

/**
 * As `withTempDir`, the folder made only when `fn` first asks for it (a small upload kept in memory
 * never does: no folder made, none removed).
 */
export async function withLazyTempDir<T>(fn: (dir: () => Promise<string>) => Promise<T>): Promise<T> {
  let made: Promise<string> | undefined;
  const dir = () => {
    made ??= newRequestDir().then((d) => {
      inUse.add(d);
      return d;
    });
    return made;
  };
  try {
    return await fn(dir);
  } finally {
    const d = await made?.catch(() => undefined);
    if (d !== undefined) {
      await rm(d, { recursive: true, force: true });
      inUse.delete(d);
    }
  }
}

/**
 * Removes the upload folders of processes that are gone (killed before their clean-up ran), and
 * those with this process's id that it is not using (a container restarts with the same pid).
 * Folders of other live processes stay. Returns what it removed.
 */
export async function sweepTempDirs(alive: (pid: number) => boolean = isAlive): Promise<string[]> {
  const root = uploadsRoot();
  const names = await readdir(root).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (inUse.has(join(root, name))) continue;
    if (Number.isSafeInteger(pid) && pid !== process.pid && alive(pid)) continue;
    await rm(join(root, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/** Whether process `pid` exists on this machine. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Where a received file lands inside the temp dir. The caller's file name never becomes a path (no
 * traversal); only a short, plain extension is kept, because some extractors look at it.
 */
export function sourcePath(dir: string, filename: string): string {
  const ext = extname(filename).toLowerCase();
  return join(dir, /^\.[a-z0-9]{1,10}$/.test(ext) ? `source${ext}` : 'source');
}
