/**
 * `npm run bench:lancedb-memory`: how LanceDB alone (no Kilde code) grows while it is written as
 * Kilde's writer writes it: `--writes` merge-inserts of `--rows` rows into a table with a full-text
 * index, an `optimize()` every `--optimize-every` writes (0: never). Each allocator configuration
 * runs in a fresh process: glibc's defaults, the mmap threshold pinned as Kilde sets it
 * (src/cli/process-memory.ts), and `MALLOC_ARENA_MAX=2`. Prints RSS every tenth write and the time; asserts
 * nothing.   npm run bench:lancedb-memory [-- --writes 100 --rows 1000 --optimize-every 10]
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connect, Index } from '@lancedb/lancedb';
import { MMAP_THRESHOLD_TUNABLE } from '../src/cli/process-memory.js';
import { mulberry32 } from './lib/stats.js';
import { treeRss } from './lib/tree-rss.js';

const { values: args } = parseArgs({
  options: {
    writes: { type: 'string', default: '100' },
    rows: { type: 'string', default: '1000' },
    'optimize-every': { type: 'string', default: '10' },
    child: { type: 'boolean', default: false },
  },
});
const WRITES = Number(args.writes);
const ROWS = Number(args.rows);
const OPTIMIZE_EVERY = Number(args['optimize-every']);
const mib = (b: number) => (b / 1024 / 1024).toFixed(0);

async function workload(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-lancemem-'));
  const rand = mulberry32(11);
  const words = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
  const text = () =>
    Array.from({ length: 160 }, () => words[Math.floor(words.length * rand() ** 2)]).join(' ');
  const rows = (w: number) => Array.from({ length: ROWS }, (_, i) => ({ id: `${w}-${i}`, text: text() }));
  const db = await connect(dir);
  try {
    const table = await db.createTable('t', rows(-1));
    await table.createIndex('text', { config: Index.fts() });
    const t0 = performance.now();
    const marks: string[] = [`start ${mib(treeRss())}`];
    for (let w = 1; w <= WRITES; w++) {
      await table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows(w));
      if (OPTIMIZE_EVERY > 0 && w % OPTIMIZE_EVERY === 0) {
        await table.optimize({ cleanupOlderThan: new Date(Date.now() - 600_000) });
      }
      if (w % 10 === 0) marks.push(`${w}: ${mib(treeRss())}`);
    }
    const s = (performance.now() - t0) / 1000;
    console.log(`  RSS MiB by write: ${marks.join(', ')}; ${s.toFixed(1)} s`);
    table.close();
  } finally {
    db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (args.child) {
  await workload();
} else {
  console.log(
    `LanceDB alone: ${WRITES} merge-inserts of ${ROWS} rows, full-text index, optimize every ${OPTIMIZE_EVERY} (load ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`,
  );
  const self = fileURLToPath(import.meta.url);
  const base = { ...process.env };
  delete base.GLIBC_TUNABLES;
  delete base.MALLOC_ARENA_MAX;
  const configs: [string, NodeJS.ProcessEnv][] = [
    ['glibc defaults', base],
    [
      `GLIBC_TUNABLES=${MMAP_THRESHOLD_TUNABLE} (Kilde's)`,
      { ...base, GLIBC_TUNABLES: MMAP_THRESHOLD_TUNABLE },
    ],
    ['MALLOC_ARENA_MAX=2', { ...base, MALLOC_ARENA_MAX: '2' }],
  ];
  for (const [label, env] of configs) {
    console.log(label);
    const argv = ['--import', 'tsx', self, '--child', '--writes', String(WRITES), '--rows', String(ROWS)];
    argv.push('--optimize-every', String(OPTIMIZE_EVERY));
    process.stdout.write(execFileSync(process.execPath, argv, { encoding: 'utf8', env }));
  }
}
