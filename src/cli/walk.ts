import { type Stats, statSync } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { CliError } from './fail.js';

export interface FoundFile {
  /** Absolute path. */
  path: string;
  /**
   * The document's path (docs/api.md, "One identity for a file"), for the file_id and `meta.source`:
   * the path relative to the root, the same whichever folder the command runs in and however the
   * path was typed. The root is `--root` when given, else the nearest folder above the file that
   * holds `.git` (the repository), else `/` (the absolute path). Two files of one name in
   * different folders never share it.
   */
  relative: string;
  /**
   * The name Kilde 0.x gave the file (`folder-name/path/in/it` for a folder argument or a glob,
   * `parent-folder/file` for a file argument): its file_id is looked up so that a document ingested
   * before keeps its id (src/ingest/file-identity.ts).
   */
  legacy: string;
  /** Its size when it was found (the walk stats every file once; passes are cut by it). */
  bytes: number;
}

export interface FindOptions {
  /** `--root`: the folder paths are relative to; a file outside it is refused. */
  root?: string;
}

/** The nearest folder at or above `dir` that holds `.git`, cached per folder. */
async function repositoryOf(dir: string, cache: Map<string, string | null>): Promise<string | null> {
  const known = cache.get(dir);
  if (known !== undefined) return known;
  const here = await stat(resolve(dir, '.git')).then(
    () => true,
    () => false,
  );
  const parent = dirname(dir);
  const found = here ? dir : parent === dir ? null : await repositoryOf(parent, cache);
  cache.set(dir, found);
  return found;
}

/**
 * `relative(dir, file)`, by slicing when `file` lies below `dir` (both absolute and normalised, as
 * the walk gives them): path.relative resolves both paths again, ≈ 10 ms for 1000 files at start-up.
 */
function relativeTo(dir: string, file: string): string {
  const prefix = dir.endsWith(sep) ? dir : dir + sep;
  return file.startsWith(prefix) ? file.slice(prefix.length) : relative(dir, file);
}

/** The document path of `file` (absolute) under `root`, or undefined when it lies outside. */
function under(root: string, file: string): string | undefined {
  const rel = relativeTo(root, file);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
}

const IGNORE = ['**/node_modules/**', '**/.git/**', '**/.kilde/**', '**/.DS_Store'];

/**
 * Every file in `root` and the folders below it, as a glob of `**\/*` with `IGNORE` lists them: a
 * name that starts with a dot (`.git`, `.kilde`, `.DS_Store` among them) or is `node_modules` is
 * skipped with all below it; a link is followed, to a file or a folder, except to a folder that
 * holds it (a loop: each folder is walked once on a way down) and when broken; what is neither file nor folder (a pipe, a socket) is left out;
 * a folder that cannot be read is passed over. One `readdir` per folder: 1000 files in one folder
 * cost ≈ 2 ms, against ≈ 30 ms for tinyglobby's import and walk (docs/performance-ingestion.md).
 */
async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  // `real`: the folder's own path with links resolved; `holders`: those of the folders above it.
  const visit = async (dir: string, real: string, holders: readonly string[]): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const chain = [...holders, real];
    // Joined by hand: `dir` is absolute and normalised, a name holds no separator (path.join
    // normalises each again, ≈ 10 ms for 1000 files in code not yet compiled).
    const inDir = dir.endsWith(sep) ? dir : dir + sep;
    // A folder already on the way down (come back to through a link) is not walked again.
    const into = (path: string, to: string) => (chain.includes(to) ? undefined : visit(path, to, chain));
    await Promise.all(
      entries.map(async (e) => {
        if (e.name.startsWith('.') || e.name === 'node_modules') return;
        const path = inDir + e.name;
        if (e.isFile()) out.push(path);
        else if (e.isDirectory()) await into(path, join(real, e.name));
        else if (e.isSymbolicLink()) {
          const target = await stat(path).catch(() => undefined);
          if (target?.isFile()) out.push(path);
          else if (target?.isDirectory()) await into(path, await realpath(path));
        }
      }),
    );
  };
  await visit(root, await realpath(root).catch(() => root), []);
  return out;
}

/** `base-folder-name/path/inside/it`, slashes on every platform. */
function named(base: string, file: string): string {
  return [basename(base), ...relativeTo(base, file).split(sep)].filter(Boolean).join('/');
}

/** The leading segments of a glob without magic characters (`docs/**\/*.md` → `docs`). */
function fixedPart(pattern: string): string {
  const parts = pattern.split(/[\\/]/);
  const fixed: string[] = [];
  for (const p of parts.slice(0, -1)) {
    if (/[*?[\]{}()!]/.test(p)) break;
    fixed.push(p);
  }
  return fixed.join('/') || '.';
}

/**
 * Expands CLI arguments into files: a file as is, a folder walked recursively, anything else as a
 * glob. Sorted and de-duplicated; hidden files are skipped inside folders.
 */
export async function findFiles(
  args: readonly string[],
  cwd = process.cwd(),
  options: FindOptions = {},
): Promise<FoundFile[]> {
  const found = await walk(args, cwd);
  const root = options.root === undefined ? undefined : resolve(cwd, options.root);
  const repos = new Map<string, string | null>();
  const out: FoundFile[] = [];
  for (const f of found) {
    let relative: string | undefined;
    if (root !== undefined) {
      relative = under(root, f.path);
      if (relative === undefined) throw new CliError(`${f.path} is outside --root ${root}`, 2);
    } else {
      const repo = await repositoryOf(dirname(f.path), repos);
      relative =
        (repo === null ? undefined : under(repo, f.path)) ?? f.path.split(sep).filter(Boolean).join('/');
    }
    out.push({ path: f.path, relative, legacy: f.legacy, bytes: f.bytes });
  }
  return out;
}

type Walked = { path: string; legacy: string; bytes: number };

/** Every argument stated at once, and every file a folder or glob names (its size for the passes). */
async function walk(args: readonly string[], cwd: string): Promise<Walked[]> {
  const out = new Map<string, Walked>();
  // Synchronously, here and for a folder's files: nothing else runs yet, and 1000 files cost ≈15 ms
  // of CPU so against ≈30 ms as 1000 promises through libuv's threads.
  const infos = args.map((arg) => statOrNone(resolve(cwd, arg)));
  for (const [i, arg] of args.entries()) {
    const abs = resolve(cwd, arg);
    const info = infos[i];
    if (info?.isFile()) {
      out.set(abs, { path: abs, legacy: named(dirname(abs), abs), bytes: info.size });
      continue;
    }
    // A folder by `readdir`; tinyglobby (≈ 12–28 ms to import) only for a glob.
    const matches = info?.isDirectory()
      ? await filesUnder(abs)
      : await (await import('tinyglobby')).glob(arg, {
          cwd,
          absolute: true,
          onlyFiles: true,
          ignore: IGNORE,
          dot: false,
        });
    const base = info?.isDirectory() ? abs : resolve(cwd, fixedPart(arg));
    // A file that vanished since the listing counts 0 bytes here and fails alone when it is read.
    for (const m of matches) out.set(m, { path: m, legacy: named(base, m), bytes: statOrNone(m)?.size ?? 0 });
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}

function statOrNone(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
