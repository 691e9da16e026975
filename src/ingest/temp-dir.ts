import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';

/** Runs `fn` with a private temporary directory that is removed afterwards, whatever happens. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-ingest-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
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
