import { type Stats, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { glob } from 'tinyglobby';
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

/** The document path of `file` (absolute) under `root`, or undefined when it lies outside. */
function under(root: string, file: string): string | undefined {
  const rel = relative(root, file);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
}

const IGNORE = ['**/node_modules/**', '**/.git/**', '**/.kilde/**', '**/.DS_Store'];

/** `base-folder-name/path/inside/it`, slashes on every platform. */
function named(base: string, file: string): string {
  return [basename(base), ...relative(base, file).split(sep)].filter(Boolean).join('/');
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
    const [root, pattern] = info?.isDirectory() ? [abs, '**/*'] : [cwd, arg];
    const matches = await glob(pattern, {
      cwd: root,
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
