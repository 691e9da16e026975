/**
 * Paired A/B of the local `kilde ingest` on a shared machine: the `kilde` launcher of two checkouts,
 * each with its dist/ built (`--a`, default this one, and `--b`, e.g. a `git worktree` of the commit
 * before a change), run one after the other on the same file set, the order flipped every round, so
 * both live through the same load. Each run is measured from outside as bench:vs-langchain measures
 * it (bench/lib/kilde-cli.ts): wall time spawn to exit, the tree's CPU, the main process's CPU, the
 * peak RSS of the tree. Prints every run and the medians. `--nice=-20` (root) runs the bench and so
 * every run under that priority, so that other users' work on a loaded machine takes less of the
 * cores from it (the figures then come nearer a quiet machine's; say so with them). Asserts nothing.
 *
 * Usage: npm run build && npx tsx bench/ab-cli.ts --b <other checkout> [--a <checkout>]
 *        [--sets small,mixed,pdf] [--rounds 6] [--files 1000] [--pages 300] [--nice=-20]
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { setPriority, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeIngestSets } from './lib/ingest-sets.js';
import { type CliRun, kildeCli } from './lib/kilde-cli.js';

const { values } = parseArgs({
  options: {
    a: { type: 'string', default: '.' },
    b: { type: 'string' },
    sets: { type: 'string', default: 'mixed' },
    rounds: { type: 'string', default: '6' },
    files: { type: 'string', default: '1000' },
    pages: { type: 'string', default: '300' },
    nice: { type: 'string' },
  },
});
if (!values.b) throw new Error('--b <folder of the other checkout, its dist/ built> is required');
if (values.nice !== undefined) setPriority(Number(values.nice));
const sides = [
  { name: 'A', launcher: join(resolve(values.a), 'bin/kilde') },
  { name: 'B', launcher: join(resolve(values.b), 'bin/kilde') },
];
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const median = (xs: readonly number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-ab-cli-'));
try {
  const sets = await writeIngestSets(work, {
    files: Number(values.files),
    pages: Number(values.pages),
    keys: values.sets.split(','),
  });
  for (const set of sets) {
    console.log(`\n${set.name}: ${sides.map((s) => `${s.name} ${s.launcher}`).join(', ')}`);
    const runs = new Map<string, CliRun[]>(sides.map((s) => [s.name, []]));
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const before = load();
        const run = await kildeCli(work, set.files, {
          chunkTokens: 400,
          overlapTokens: 80,
          launcher: side.launcher,
        });
        runs.get(side.name)!.push(run);
        console.log(
          `  ${side.name} round ${round + 1}: ${run.seconds.toFixed(2)} s, CPU ${run.cpu.toFixed(2)} s (main ${run.cpuMain.toFixed(2)}), peak ${mib(run.peakRss)} MiB, ${run.chunks} chunks, load ${before}`,
        );
      }
    }
    for (const side of sides) {
      const r = runs.get(side.name)!;
      console.log(
        `  ${side.name} median: ${median(r.map((x) => x.seconds)).toFixed(2)} s, CPU ${median(r.map((x) => x.cpu)).toFixed(2)} s (main ${median(r.map((x) => x.cpuMain)).toFixed(2)}), peak ${mib(median(r.map((x) => x.peakRss)))} MiB`,
      );
    }
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
