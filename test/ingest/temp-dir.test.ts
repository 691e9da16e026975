import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadsRoot, withTempDir } from '../../src/ingest/temp-dir.js';

/* A request's upload folder: private, removed afterwards, under a root made once per process. */
let own: string;
const saved = process.env.TMPDIR;
beforeAll(async () => {
  // A root of this test's own, so removing it touches no other process's uploads.
  own = await mkdtemp(join(tmpdir(), 'kilde-temp-dir-'));
  process.env.TMPDIR = own;
});
afterAll(async () => {
  if (saved === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = saved;
  await rm(own, { recursive: true, force: true });
});

describe('withTempDir', () => {
  it('gives each request its own folder and removes it, also after the root itself was removed', async () => {
    expect(uploadsRoot()).toBe(join(own, 'kilde-uploads'));
    const seen: string[] = [];
    for (let i = 0; i < 2; i++) {
      await withTempDir(async (dir) => {
        expect(dir.startsWith(join(uploadsRoot(), `${process.pid}-`))).toBe(true);
        await writeFile(join(dir, 'source.txt'), 'x');
        seen.push(dir);
      });
    }
    expect(new Set(seen).size).toBe(2);
    for (const dir of seen) await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
    // A tmp cleaner removed the whole root: the next request makes it again.
    await rm(uploadsRoot(), { recursive: true, force: true });
    expect(await withTempDir(async (dir) => (await stat(dir)).isDirectory())).toBe(true);
  });
});
