import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const KEY_FILE = 'api-key';

export interface StoredKey {
  key: string;
  path: string;
  /** True when this call generated it. */
  created: boolean;
}

/** 256 random bits, URL-safe, so it pastes into a header or a shell without quoting. */
export function generateKey(): string {
  return `kilde_${randomBytes(32).toString('base64url')}`;
}

/** The key stored in the data directory, if any. */
export async function readStoredKey(dataDir: string): Promise<string | undefined> {
  const text = await readFile(join(dataDir, KEY_FILE), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  const key = text?.trim();
  return key ? key : undefined;
}

/**
 * The quickstart's key: read from `{dataDir}/api-key`, or generated once and stored there readable
 * by the owner only (0600). Creation uses `wx`, so two first starts cannot write different keys.
 */
export async function loadOrCreateKey(dataDir: string): Promise<StoredKey> {
  const path = join(dataDir, KEY_FILE);
  const existing = await readStoredKey(dataDir);
  if (existing) {
    // A key copied in with a loose mode is tightened rather than left world-readable.
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
    return { key: existing, path, created: false };
  }
  await mkdir(dataDir, { recursive: true });
  const key = generateKey();
  try {
    await writeFile(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const raced = await readStoredKey(dataDir);
    if (!raced) throw new Error(`${path} exists but is empty; remove it to generate a new key`);
    return { key: raced, path, created: false };
  }
  return { key, path, created: true };
}
