import { stat } from 'node:fs/promises';
import { basename, dirname, relative, resolve, sep } from 'node:path';
import { glob } from 'tinyglobby';

export interface FoundFile {
  /** Absolute path. */
  path: string;
  /**
   * Stable name for the file_id and `meta.source`, the same whichever folder the command runs in and
   * however the path was typed: `folder-name/path/in/it` for a folder argument or a glob (its
   * folder is the glob's fixed leading part), `parent-folder/file` for a file argument.
   */
  relative: string;
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
export async function findFiles(args: readonly string[], cwd = process.cwd()): Promise<FoundFile[]> {
  const out = new Map<string, FoundFile>();
  for (const arg of args) {
    const abs = resolve(cwd, arg);
    const info = await stat(abs).catch(() => undefined);
    if (info?.isFile()) {
      out.set(abs, { path: abs, relative: named(dirname(abs), abs) });
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
    for (const m of matches) out.set(m, { path: m, relative: named(base, m) });
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}
