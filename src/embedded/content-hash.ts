import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

/**
 * The SHA-256 of a file's bytes, hex: what the folder sync and `kilde ingest --url`'s manifest
 * compare. A module of its own, so the `--url` client loads no ingestion code for it.
 */
export async function contentHash(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
