import { stat } from 'node:fs/promises';
import { DEFAULT_PASS_FILES, PASS_BYTES } from '../ingest/pass-queue.js';

/** Files per pipeline pass of the local `kilde ingest` (`--batch`), and the most bytes of one. */
export { DEFAULT_PASS_FILES, PASS_BYTES };

/**
 * The local ingest's passes: consecutive files, at most `maxFiles` and about `PASS_BYTES` per pass
 * (a pass holds its files' texts and chunks at once), a larger file alone. A file's `bytes`, when the
 * walk read them, are used as they are; the others are stated.
 */
export async function passesOf<T extends { path: string; bytes?: number }>(
  files: readonly T[],
  maxFiles: number,
): Promise<T[][]> {
  const sizes = await Promise.all(
    files.map((f) =>
      f.bytes !== undefined
        ? f.bytes
        : stat(f.path).then(
            (s) => s.size,
            () => 0,
          ),
    ),
  );
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  files.forEach((f, i) => {
    const size = sizes[i]!;
    if (current.length > 0 && (current.length >= maxFiles || bytes + size > PASS_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(f);
    bytes += size;
  });
  if (current.length > 0) out.push(current);
  return out;
}
