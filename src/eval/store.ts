import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type EvalRun, evalRunSchema, type RunSummary, summaryOf } from './run.js';

/** Run ids are file names: letters, digits, `.`, `_`, `-`; nothing that can leave the directory. */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** `20250101T120000Z-3f9a`: sortable by time, unique enough for one operator's runs. */
export function newRunId(now: Date, random = randomBytes(2).toString('hex')): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${random}`;
}

/**
 * Evaluation runs as one JSON file each in a directory (`$KILDE_DATA_DIR/eval-runs` unless
 * `EVAL_RUNS_DIR` says otherwise): readable, diffable, and a file a CI job can keep as its baseline.
 */
export function createRunStore(dir: string) {
  const pathOf = (id: string) => {
    if (!RUN_ID.test(id)) throw new Error(`not a run id: ${JSON.stringify(id)}`);
    return join(dir, `${id}.json`);
  };
  return {
    dir,
    async save(run: EvalRun): Promise<void> {
      await mkdir(dir, { recursive: true });
      // Written whole, then renamed: a reader never sees half a run.
      const tmp = `${pathOf(run.id)}.${process.pid}.tmp`;
      await writeFile(tmp, `${JSON.stringify(run, null, 2)}\n`);
      await rename(tmp, pathOf(run.id));
    },
    /** The run, or undefined when there is none of that id. */
    async get(id: string): Promise<EvalRun | undefined> {
      if (!RUN_ID.test(id)) return undefined;
      let text: string;
      try {
        text = await readFile(pathOf(id), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      return evalRunSchema.parse(JSON.parse(text));
    },
    /** Every stored run, oldest first; unreadable files are left out. */
    async list(): Promise<RunSummary[]> {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      const out: RunSummary[] = [];
      for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
        const run = await this.get(name.slice(0, -'.json'.length)).catch(() => undefined);
        if (run) out.push(summaryOf(run));
      }
      return out;
    },
  };
}

export type RunStore = ReturnType<typeof createRunStore>;
