import { stat } from 'node:fs/promises';
import { basename, relative, resolve } from 'node:path';
import { glob } from 'tinyglobby';

export interface FoundFile {
  /** Absolute path. */
  path: string;
  /**
   * Stable name for the file_id: inside a folder argument `folder-name/path/in/it` (the same wherever
   * the folder lives or however it was typed), else the path relative to the working directory.
   */
  relative: string;
}

const IGNORE = ['**/node_modules/**', '**/.git/**', '**/.kilde/**', '**/.DS_Store'];

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
      out.set(abs, { path: abs, relative: relative(cwd, abs) || arg });
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
    for (const m of matches) {
      const rel = relative(info?.isDirectory() ? abs : cwd, m);
      out.set(m, { path: m, relative: info?.isDirectory() ? `${basename(abs)}/${rel}` : rel });
    }
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}
