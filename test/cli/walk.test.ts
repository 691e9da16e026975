import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { findFiles } from '../../src/cli/walk.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/**
 * What `kilde ingest <folder>` and `kilde ingest '<glob>'` find (src/cli/walk.ts): every file below a
 * folder except hidden names and node_modules, links followed once, sorted; each with its document
 * path, its Kilde 0.x name and its size.
 */
const newDir = tempDirs('kilde-walk-');
let top: string;

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(top, path)), { recursive: true });
  await writeFile(join(top, path), text);
}

/** The tree walked: file contents by path (their lengths are the sizes found), then the links. */
const FILES: Record<string, string> = {
  'proj/.git/HEAD': 'ref',
  'proj/notes/a.md': 'alpha',
  'proj/notes/deep/b.txt': 'bravo!',
  'proj/notes/Zed.txt': 'z',
  'proj/notes/we[ir]d *.txt': 'odd name',
  'proj/notes/.hidden.txt': 'hidden',
  'proj/notes/.cache/c.txt': 'hidden folder',
  'proj/notes/.DS_Store': 'mac',
  'proj/notes/.kilde/k.txt': 'state',
  'proj/notes/node_modules/pkg/index.js': 'dependency',
  'proj/notes/deep/node_modules': 'a file of that name',
  'outside/linked/l.txt': 'linked folder',
  'outside/single.txt': 'linked file',
  'cycle/x.txt': 'x',
  'cycle/sub/y.txt': 'y',
};
const LINKS: Record<string, string> = {
  'proj/notes/to-folder': 'outside/linked',
  'proj/notes/to-file.txt': 'outside/single.txt',
  'proj/notes/broken.txt': 'nowhere',
  'cycle/sub/up': 'cycle',
};

beforeAll(async () => {
  top = await newDir();
  for (const [path, text] of Object.entries(FILES)) await put(path, text);
  for (const [path, to] of Object.entries(LINKS)) await symlink(join(top, to), join(top, path));
  execFileSync('mkfifo', [join(top, 'proj/notes/pipe')]);
});

describe('findFiles', () => {
  it('walks a folder: hidden names and node_modules skipped, links followed once, sorted', async () => {
    const found = await findFiles(['notes'], join(top, 'proj'));
    expect(found.map((f) => [f.relative, f.legacy, f.bytes])).toEqual([
      ['notes/a.md', 'notes/a.md', 5],
      ['notes/deep/b.txt', 'notes/deep/b.txt', 6],
      ['notes/to-file.txt', 'notes/to-file.txt', 11],
      ['notes/to-folder/l.txt', 'notes/to-folder/l.txt', 13],
      ['notes/we[ir]d *.txt', 'notes/we[ir]d *.txt', 8],
      ['notes/Zed.txt', 'notes/Zed.txt', 1],
    ]);
    expect(found[0]?.path).toBe(join(top, 'proj/notes/a.md'));
  });

  it('names files from --root, and from / outside a repository', async () => {
    const rooted = await findFiles([join(top, 'proj/notes/deep')], '/', { root: join(top, 'proj/notes') });
    expect(rooted.map((f) => [f.relative, f.legacy])).toEqual([['deep/b.txt', 'deep/b.txt']]);
    const loose = await findFiles(['linked'], join(top, 'outside'));
    expect(loose.map((f) => [f.relative, f.legacy])).toEqual([
      [join(top, 'outside/linked/l.txt').slice(1), 'linked/l.txt'],
    ]);
  });

  it('expands a glob with the same rules, and takes a file argument as it is', async () => {
    const found = await findFiles(['notes/**/*.txt', 'notes/.hidden.txt'], join(top, 'proj'));
    expect(found.map((f) => [f.relative, f.legacy])).toEqual([
      ['notes/.hidden.txt', 'notes/.hidden.txt'],
      ['notes/deep/b.txt', 'notes/deep/b.txt'],
      ['notes/to-file.txt', 'notes/to-file.txt'],
      ['notes/to-folder/l.txt', 'notes/to-folder/l.txt'],
      ['notes/we[ir]d *.txt', 'notes/we[ir]d *.txt'],
      ['notes/Zed.txt', 'notes/Zed.txt'],
    ]);
  });

  it('walks a folder once on a way down: a link back to a folder above is not followed', async () => {
    const found = await findFiles(['cycle'], top);
    expect(found.map((f) => f.legacy)).toEqual(['cycle/sub/y.txt', 'cycle/x.txt']);
    // From below, the folder the link leads to is new: walked once, without coming back down.
    const below = await findFiles(['cycle/sub'], top);
    expect(below.map((f) => f.legacy)).toEqual(['sub/up/x.txt', 'sub/y.txt']);
  });

  it('finds nothing in an empty folder, and nothing for a path that does not exist', async () => {
    await mkdir(join(top, 'empty'));
    expect(await findFiles(['empty'], top)).toEqual([]);
    expect(await findFiles(['missing'], top)).toEqual([]);
  });
});
