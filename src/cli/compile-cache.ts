import module from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Node's on-disk compile cache (`module.enableCompileCache`, Node ≥ 22.8): the bytecode V8 compiled
 * for Kilde's modules and its dependencies' is kept between runs, so a later `kilde` command, and
 * every extraction worker it or the server starts, skips parsing and compiling them. `kilde ingest`
 * of 1000 small files spent ≈0.1 s less CPU in its main process alone (docs/performance.md, "Node's
 * compile cache"). V8 checks each entry against the source's hash and its own version and flags, so
 * a changed module is compiled afresh.
 *
 * The cache is the user's own (never a directory shared by every user of the machine, as Node's
 * default under the OS temp directory is): `NODE_COMPILE_CACHE` when the operator set it (Node's own
 * variable), else `$XDG_CACHE_HOME/kilde/compile-cache`, else `~/.cache/kilde/compile-cache`.
 * `NODE_DISABLE_COMPILE_CACHE` (Node's own switch) turns it off; a directory that cannot be created
 * leaves it off, silently (nothing but speed depends on it).
 */
export function compileCacheDir(
  env: Record<string, string | undefined>,
  /** The user's home directory; null when there is none. */
  home: string | null = userHome(),
): string | undefined {
  if (nonEmpty(env.NODE_DISABLE_COMPILE_CACHE)) return undefined;
  const own = nonEmpty(env.NODE_COMPILE_CACHE);
  if (own) return own;
  const cacheHome = nonEmpty(env.XDG_CACHE_HOME) ?? (home ? join(home, '.cache') : undefined);
  if (cacheHome) return join(cacheHome, 'kilde', 'compile-cache');
  // No home at all (a bare service account): a directory named for the user, not the shared default.
  return join(tmpdir(), `kilde-compile-cache-${process.getuid?.() ?? 'user'}`);
}

/**
 * Turns the cache on for this process, before the CLI's modules load (bin/kilde.js), and puts its
 * directory in `env` (the process's own environment) so that every process started from here on —
 * the extraction pool's workers — uses it from its own start. Returns the directory, or undefined
 * when the cache stays off.
 */
export function startCompileCache(env: Record<string, string | undefined> = process.env): string | undefined {
  const dir = compileCacheDir(env);
  if (dir === undefined || typeof module.enableCompileCache !== 'function') return undefined;
  const { status } = module.enableCompileCache(dir);
  const { ENABLED, ALREADY_ENABLED } = module.constants.compileCacheStatus;
  if (status !== ENABLED && status !== ALREADY_ENABLED) return undefined;
  env.NODE_COMPILE_CACHE = dir;
  return dir;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value : undefined;
}

function userHome(): string | null {
  try {
    return nonEmpty(homedir()) ?? null;
  } catch {
    return null;
  }
}
