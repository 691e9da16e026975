import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/helpers/suite-order.js';

/*
 * The suite in four projects, chosen by path (no test file moves to change its project):
 * - `unit`: everything in this process (the app's own extraction pool may fork its workers);
 * - `process`: files that start programs or servers: the `kilde` CLI, `redis-server`, the worker
 *   pool driven directly, LibreOffice, a child writer, Qdrant nodes (the live files skip with their
 *   reason without QDRANT_URL / QDRANT_BIN);
 * - `reliability`: crash, fuzz and hostile-input suites (`npm run test:reliability -- --long`);
 * - `browser`: the web console in Chromium.
 * `npm test` runs all four in one run on two workers, longest file first over all of them
 * (test/helpers/suite-order.ts), and prints each project's time (test/helpers/project-times.ts).
 * A new file that starts a process goes in PROCESS (CONTRIBUTING.md, "Tests").
 */
const RELIABILITY = ['test/reliability/**/*.test.ts'];
const BROWSER = ['test/console/browser.test.ts'];
const PROCESS = [
  'test/cli/**/*.test.ts',
  'test/pool/**/*.test.ts',
  'test/scale/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/live/**/*.test.ts',
  'test/config/parse.test.ts',
  'test/config/vision.test.ts',
  'test/extract/pdf-parts.test.ts',
  'test/extract/pdf-readers.test.ts',
  'test/extract/vision.test.ts',
  'test/http/shutdown.test.ts',
  'test/index/lancedb.test.ts',
  'test/index/qdrant-live.test.ts',
  'test/ingest/concurrent-passes.test.ts',
  'test/ingest/jobs.test.ts',
  'test/ingest/jobs-late-progress.test.ts',
  'test/ingest/jobs-spool.test.ts',
  'test/ingest/knowledge.test.ts',
  'test/ingest/redis-lock.test.ts',
  'test/ingest/streamed.test.ts',
  'test/retrieve/engine-parity.test.ts',
  'test/retrieve/processes.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Every project shares these two workers (one `sequence.groupOrder`), so a long file of one
    // project runs beside the short files of the others.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    reporters: ['default', './test/helpers/project-times.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...PROCESS, ...RELIABILITY, ...BROWSER],
        },
      },
      { extends: true, test: { name: 'process', include: PROCESS } },
      { extends: true, test: { name: 'reliability', include: RELIABILITY } },
      { extends: true, test: { name: 'browser', include: BROWSER } },
    ],
  },
});
