import { stat } from 'node:fs/promises';
import type { Env } from '../config/parse.js';
import { DEFAULT_PASS_FILES, PASS_BYTES } from '../ingest/pass-queue.js';
import { packRuns } from '../pack.js';

/** Files per pipeline pass of the local `kilde ingest` (`--batch`), and the most bytes of one. */
export { DEFAULT_PASS_FILES, PASS_BYTES };

/**
 * A local `kilde ingest` of files totalling at most this many bytes runs on one extraction worker
 * unless `EXTRACTION_WORKERS` is set: a few seconds of one worker's work does not pay for a second
 * worker's start (≈0.25 s of CPU, ≈85 MiB) and the libraries it loads again (mammoth 0.4–0.8 s,
 * PDFium, eld). On the 61 mixed documents (1.7 MiB) it cut the peak RSS from 440–450 to 340 MiB at
 * the same or less CPU (docs/performance-ingestion.md, "Against LangChain.js").
 */
export const ONE_WORKER_BYTES = 8 * 1024 * 1024;

/** The environment of a local ingest of `files`: `EXTRACTION_WORKERS=1` for a small job (`ONE_WORKER_BYTES`). */
export function ingestEnv(env: Env, files: readonly { bytes?: number }[]): Env {
  if (env.EXTRACTION_WORKERS?.trim()) return env;
  const total = files.reduce((sum, f) => sum + (f.bytes ?? 0), 0);
  return total <= ONE_WORKER_BYTES ? { ...env, EXTRACTION_WORKERS: '1' } : env;
}

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
  return packRuns(files, (_, i) => sizes[i]!, { maxWeight: PASS_BYTES, maxItems: maxFiles });
}
