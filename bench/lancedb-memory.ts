/**
 * `npm run bench:lancedb-memory`: how LanceDB alone (no Kilde code) grows while it is written as
 * Kilde's writer writes it: `--writes` merge-inserts of `--rows` rows into a table with a full-text
 * index, an `optimize()` every `--optimize-every` writes (0: never). Each allocator configuration
 * runs in a fresh process: glibc's defaults, the mmap threshold pinned as Kilde sets it
 * (src/cli/process-memory.ts), and `MALLOC_ARENA_MAX=2`, each with LanceDB's own session caches; last,
 * Kilde's allocator setting with the caches bounded as Kilde bounds them (`--cache INDEX,METADATA`,
 * default 256,64). Prints RSS every tenth write and the time; asserts nothing.
 *   npm run bench:lancedb-memory [-- --writes 100 --rows 1000 --optimize-every 10 --cache 256,64]
 *
 * `--churn N`: instead, what a long-running server does (the soak's pattern, LanceDB alone): N cycles of
 * a small commit (3 rows added, the previous rows of the same file deleted) and a filtered query on a
 * table of a constant ~120 rows with a full-text index, an optimize every 20 cycles; `--no-query`,
 * `--no-delete`, `--no-write` leave a step out. Runs twice, each in a fresh process with Kilde's
 * allocator setting: with LanceDB's own session caches (6 GiB index, 1 GiB metadata) and with the
 * bounds Kilde gives them (`--cache INDEX,METADATA` in MiB, default 256,64: src/index/lancedb-session.ts).
 * Prints RSS and what the caches hold every 500 cycles; the table does not grow, so neither should RSS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connect, Index, Session } from '@lancedb/lancedb';
import { MMAP_THRESHOLD_TUNABLE } from '../src/cli/process-memory.js';
import { LEXICAL_CACHE_MB } from '../src/index/lancedb-cache.js';
import { sessionFor } from '../src/index/lancedb-session.js';
import { mulberry32 } from './lib/stats.js';
import { treeRss } from './lib/tree-rss.js';

const { values: args } = parseArgs({
  options: {
    writes: { type: 'string', default: '100' },
    rows: { type: 'string', default: '1000' },
    'optimize-every': { type: 'string', default: '10' },
    child: { type: 'boolean', default: false },
    churn: { type: 'string' },
    'no-query': { type: 'boolean', default: false },
    'no-delete': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    cache: { type: 'string' },
  },
});
const WRITES = Number(args.writes);
const ROWS = Number(args.rows);
const OPTIMIZE_EVERY = Number(args['optimize-every']);
const mib = (b: number) => (b / 1024 / 1024).toFixed(0);

/** Without --cache: LanceDB's own session (what `connect` makes when given none); with it, Kilde's bounded one. */
function sessionOf(): Session {
  const [index = 0, metadata = 0] = (args.cache ?? '').split(',').map(Number);
  return args.cache === undefined ? Session.default() : sessionFor({ index, metadata });
}

async function workload(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-lancemem-'));
  const rand = mulberry32(11);
  const words = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
  const text = () =>
    Array.from({ length: 160 }, () => words[Math.floor(words.length * rand() ** 2)]).join(' ');
  const rows = (w: number) => Array.from({ length: ROWS }, (_, i) => ({ id: `${w}-${i}`, text: text() }));
  const db = await connect(dir, { session: sessionOf() });
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

/** `--churn`: small commits and queries on a table that stays the same size (see the header). */
async function churn(cycles: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-lancechurn-'));
  const session = sessionOf();
  const db = await connect(dir, { session });
  const held = () => `${mib(process.memoryUsage.rss())} (caches ${mib(Number(session.sizeBytes()))})`;
  try {
    const table = await db.createTable('t', [{ id: 'seed', file: 'f0', text: 'seed row' }]);
    await table.createIndex('text', { config: Index.fts() });
    const t0 = performance.now();
    const marks: string[] = [];
    for (let i = 0; i < cycles; i++) {
      const file = `f${i % 40}`;
      if (!args['no-write']) {
        await table.add(
          [0, 1, 2].map((k) => ({ id: `${i}-${k}`, file, text: `text ${i} ${k} lorem ipsum` })),
        );
      }
      if (!args['no-delete']) await table.delete(`file = '${file}' AND id NOT LIKE '${i}-%'`);
      if (!args['no-query']) await table.query().where(`file = '${file}'`).select(['id']).toArray();
      if (i > 0 && i % 20 === 0) await table.optimize({ cleanupOlderThan: new Date(Date.now() - 600_000) });
      if (i % 500 === 0) marks.push(`${i}: ${held()}`);
    }
    marks.push(`${cycles}: ${held()}`);
    const s = (performance.now() - t0) / 1000;
    console.log(
      `  RSS MiB by cycle: ${marks.join(', ')}; ${s.toFixed(1)} s; ${await table.countRows()} rows`,
    );
    table.close();
  } finally {
    db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (args.child && args.churn !== undefined) {
  await churn(Number(args.churn));
} else if (args.child) {
  await workload();
} else if (args.churn !== undefined) {
  const steps = ['write', 'delete', 'query'].filter((s) => !args[`no-${s}` as 'no-write']);
  console.log(
    `LanceDB alone, churn: ${args.churn} cycles of ${steps.join(' + ')}, optimize every 20; GLIBC_TUNABLES=${MMAP_THRESHOLD_TUNABLE} (Kilde's)`,
  );
  const skip = ['no-write', 'no-delete', 'no-query']
    .filter((k) => args[k as 'no-write'])
    .map((k) => `--${k}`);
  const argv = ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', '--churn', args.churn, ...skip];
  const env = { ...process.env, GLIBC_TUNABLES: MMAP_THRESHOLD_TUNABLE };
  const bounds = args.cache ?? `${LEXICAL_CACHE_MB.index},${LEXICAL_CACHE_MB.metadata}`;
  console.log("LanceDB's own session caches (6 GiB index, 1 GiB metadata)");
  process.stdout.write(execFileSync(process.execPath, argv, { encoding: 'utf8', env }));
  console.log(`Kilde's bounds: ${bounds} MiB (index, metadata)`);
  process.stdout.write(
    execFileSync(process.execPath, [...argv, '--cache', bounds], { encoding: 'utf8', env }),
  );
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
  // Last, everything as Kilde runs LanceDB: its allocator setting and its bounded caches.
  const bounds = args.cache ?? `${LEXICAL_CACHE_MB.index},${LEXICAL_CACHE_MB.metadata}`;
  const runs: [string, NodeJS.ProcessEnv, string[]][] = [
    ...configs.map(([label, env]): [string, NodeJS.ProcessEnv, string[]] => [
      `${label}; LanceDB's own session caches`,
      env,
      [],
    ]),
    [`Kilde's: ${configs[1]![0]}, caches bounded ${bounds} MiB`, configs[1]![1], ['--cache', bounds]],
  ];
  for (const [label, env, extra] of runs) {
    console.log(label);
    const argv = ['--import', 'tsx', self, '--child', '--writes', String(WRITES), '--rows', String(ROWS)];
    argv.push('--optimize-every', String(OPTIMIZE_EVERY), ...extra);
    process.stdout.write(execFileSync(process.execPath, argv, { encoding: 'utf8', env }));
  }
}
