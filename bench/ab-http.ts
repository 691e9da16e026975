/**
 * Paired A/B of the per-upload path on a shared machine: a real `kilde serve ingest` of this
 * checkout's built dist/ (A) and one of another checkout's (B, `--b <folder>`, e.g. a `git archive`
 * of the commit before a change with its dist/ built), both up at once, taking the same SciFact
 * abstracts as one `PUT /api/v1/ingest` each, file by file to A then B (the order flipped every
 * other file), `--c` files in flight. Both servers live through the same load at the same moments,
 * so the difference in their CPU (each server's whole process tree, its pool workers and LanceDB's
 * threads included) is the change's, where two separate runs on a busy machine differ by ±30 %.
 * Twenty files each first, not counted (start-up, the first commit). Prints the CPU a file of each
 * server, its main process and its workers. Asserts nothing. Run it once each way round (A and B
 * swapped) to see how much the order weighs.
 *
 * Usage: npm run build && npx tsx bench/ab-http.ts --b <other checkout> [--files 320 --c 1]
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeIngestSets } from './lib/ingest-sets.js';
import { putFile, startServer, treeCpu } from './lib/kilde-http.js';
import { cpuMsOf } from './lib/proc-cpu.js';

const { values } = parseArgs({
  options: {
    b: { type: 'string' },
    files: { type: 'string', default: '320' },
    c: { type: 'string', default: '1' },
  },
});
if (!values.b) throw new Error('--b <folder of the other checkout, its dist/ built> is required');
const other = resolve(values.b);
// B's own launcher and dist/: its bench/lib/kilde-http.ts starts them.
const b = (await import(join(other, 'bench/lib/kilde-http.ts'))) as typeof import('./lib/kilde-http.js');
const WARM = 20;

const work = await mkdtemp(join(tmpdir(), 'kilde-bench-ab-'));
try {
  const [set] = await writeIngestSets(work, {
    files: Number(values.files) + WARM,
    pages: 0,
    keys: ['small'],
  });
  const files = set!.files;
  const servers = [
    { name: 'A (this checkout)', ...(await startServer(await mkdtemp(join(work, 'a-')), {})) },
    { name: `B (${other})`, ...(await b.startServer(await mkdtemp(join(work, 'b-')), {})) },
  ];
  for (let i = 0; i < WARM; i++) for (const s of servers) await putFile(s.url, files[i]!, `warm-${i}`);
  const before = servers.map((s) => ({ tree: treeCpu(s.child.pid!), main: cpuMsOf(s.child.pid!) ?? 0 }));
  let next = WARM;
  const client = async () => {
    for (let i = next++; i < files.length; i = next++) {
      for (const s of i % 2 === 0 ? servers : [...servers].reverse())
        await putFile(s.url, files[i]!, `f-${i}`);
    }
  };
  await Promise.all(Array.from({ length: Number(values.c) }, client));
  const n = files.length - WARM;
  const ms = (seconds: number) => ((seconds / n) * 1000).toFixed(2);
  console.log(`bench/ab-http: ${n} uploads to each server, c=${values.c}`);
  servers.forEach((s, k) => {
    const tree = treeCpu(s.child.pid!) - before[k]!.tree;
    const main = ((cpuMsOf(s.child.pid!) ?? 0) - before[k]!.main) / 1000;
    console.log(
      `  ${s.name}: ${ms(tree)} ms of server CPU a file (main process ${ms(main)}, workers ${ms(tree - main)})`,
    );
  });
  console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`);
  for (const s of servers) {
    s.child.kill('SIGTERM');
    await once(s.child, 'exit');
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
