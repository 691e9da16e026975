import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runMeasured } from './measured.js';

/*
 * The LangChain.js pipeline a TypeScript user would build instead (bench/vs-langchain/runner.mjs:
 * its loaders, RecursiveCharacterTextSplitter at 1600/320 characters, a zero-cost embedder, the
 * LanceDB store), installed apart from Kilde in bench/vs-langchain/ (its peer tree needs
 * --legacy-peer-deps), each run a fresh process.
 */

export const LC_DIR = fileURLToPath(new URL('../vs-langchain/', import.meta.url));

/** Installs the LangChain.js side from its lockfile on first use. */
export function ensureLangChain(): void {
  if (existsSync(join(LC_DIR, 'node_modules'))) return;
  // `npm install` from the lockfile: npm 11's `npm ci` refuses it (the lockfile lists only the
  // platform binaries of LanceDB that were installed), where `install` takes the locked versions.
  console.log(
    'installing the LangChain.js side into bench/vs-langchain/ (npm install --legacy-peer-deps) ...',
  );
  execFileSync('npm', ['install', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: LC_DIR,
    stdio: 'inherit',
  });
}

/** bulk: one `fromDocuments` over every file; per-file: `addDocuments` as each file is loaded (uploads one by one); fts: bulk plus a full-text index; floor: loaders alone, then LanceDB alone. */
export type LangChainMode = 'bulk' | 'per-file' | 'fts' | 'floor';

export interface LangChainRun {
  files: number;
  chunks: number;
  /** From the first file to the end, timed inside the process (its start and imports left out). */
  seconds: number;
  /** From the spawn to the exit, as a user waits for it (Node's start and the imports included). */
  processSeconds: number;
  peakRss: number;
  cpu?: number;
  ftsSeconds?: number;
  loadSeconds?: number;
}

/** One run of the LangChain.js side over the files listed in `list` (a JSON array of paths). */
export async function runLangChain(mode: LangChainMode, list: string, work: string): Promise<LangChainRun> {
  const dir = await mkdtemp(join(work, `langchain-${mode}-`));
  const flag = { bulk: {}, 'per-file': { LC_PER_FILE: '1' }, fts: { LC_FTS: '1' }, floor: { LC_FLOOR: '1' } }[
    mode
  ];
  try {
    const res = await runMeasured(process.execPath, [join(LC_DIR, 'runner.mjs'), list, dir, '1600', '320'], {
      ...process.env,
      ...flag,
    });
    const line = res.stdout.trim().split('\n').at(-1) ?? '';
    if (!line.startsWith('{'))
      throw new Error(`LangChain.js ${mode} printed no result: ${res.stderr.slice(-2000)}`);
    const inside = JSON.parse(line) as Omit<LangChainRun, 'processSeconds'>;
    return {
      ...inside,
      processSeconds: res.seconds,
      cpu: res.cpu,
      peakRss: Math.max(inside.peakRss, res.peakRss),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
