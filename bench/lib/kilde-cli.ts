import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kildeEnv } from './kilde-http.js';
import { lanceVersions } from './lance-versions.js';
import { runMeasured } from './measured.js';

/*
 * The local `kilde ingest` exactly as a user runs it: the `kilde` launcher (bin/kilde: its memory
 * settings, then bin/kilde.js: the user's compile cache, then the built dist/), the files named on its
 * command line, into a fresh embedded LanceDB index, settled (full-text index built) before it exits.
 * Without `embeddings`, lexical only (`EMBEDDING_PROVIDER=none`, the local CLI's default: no model, no
 * vector column). With it, dense vectors come from `EMBEDDING_PROVIDER=http-compat` (base64) at that
 * zero-cost endpoint of the bench's (bench/lib/zero-cost.ts), so the table has the 384-dimension
 * vector column the LangChain.js side writes and no model's cost is counted; the HTTP client's own
 * cost stays on Kilde's side, as a user with an embedding server pays it. Measured from outside
 * (bench/lib/measured.ts): spawn to exit, the CPU of the process and its extraction workers.
 */

const LAUNCHER = fileURLToPath(new URL('../../bin/kilde', import.meta.url));

/**
 * A Kilde process's dense path (`EMBEDDING_PROVIDER=http-compat`, base64) pointed at a zero-cost
 * endpoint (bench/lib/zero-cost.ts `serveZeroCostEmbeddings`), 384 dimensions, no prefixes (the other
 * sides send their texts as they are).
 */
export function zeroCostEmbeddingEnv(url: string): Record<string, string> {
  return {
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: url,
    EMBEDDING_MODEL: 'zero-cost',
    EMBEDDING_DIM: '384',
    EMBEDDING_ENCODING_FORMAT: 'base64',
    EMBEDDING_PREFIX_DOC: '',
    EMBEDDING_PREFIX_QUERY: '',
  };
}

export interface CliRun {
  files: number;
  chunks: number;
  seconds: number;
  cpu: number;
  cpuMain: number;
  peakRss: number;
  peakMain: number;
  peakWorker: number;
  versions: number;
}

export async function kildeCli(
  work: string,
  files: readonly string[],
  o: {
    embeddings?: string | undefined;
    chunkTokens: number;
    overlapTokens: number;
    env?: Record<string, string>;
    /** Another launcher to compare with bin/kilde (A/B of process settings). */
    launcher?: string;
  },
): Promise<CliRun> {
  const data = await mkdtemp(join(work, 'kilde-cli-'));
  try {
    const res = await runMeasured(o.launcher ?? LAUNCHER, ['ingest', ...files, '-c', 'bench'], {
      ...kildeEnv(),
      KILDE_DATA_DIR: data,
      ...(o.embeddings ? zeroCostEmbeddingEnv(o.embeddings) : {}),
      CHUNK_SIZE: String(o.chunkTokens),
      CHUNK_OVERLAP: String(o.overlapTokens),
      ...o.env,
    });
    const line = res.stdout
      .trim()
      .split('\n')
      .findLast((l) => l.startsWith('{"summary"'));
    if (!line) throw new Error(`kilde ingest printed no summary:\n${res.stderr.slice(-2000)}`);
    const { summary } = JSON.parse(line) as { summary: { ok: number; failed: number; chunks: number } };
    if (summary.failed > 0 || summary.ok !== files.length) {
      throw new Error(
        `kilde ingest: ${summary.failed} of ${files.length} failed:\n${res.stderr.slice(-2000)}`,
      );
    }
    return {
      files: files.length,
      chunks: summary.chunks,
      seconds: res.seconds,
      cpu: res.cpu,
      cpuMain: res.cpuMain,
      peakRss: res.peakRss,
      peakMain: res.peakMain,
      peakWorker: res.peakChild,
      versions: (await lanceVersions(data)).versions,
    };
  } finally {
    await rm(data, { recursive: true, force: true });
  }
}
