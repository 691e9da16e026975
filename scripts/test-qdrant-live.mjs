#!/usr/bin/env node
// npm run test:qdrant-live [vitest args]: the index contract suite and every HTTP test that runs on
// the Qdrant fake, against a real Qdrant (docs/qdrant.md says which versions were run and how).
//
//   QDRANT_URL=http://127.0.0.1:6333 [QDRANT_API_KEY=…] npm run test:qdrant-live
//   QDRANT_CLUSTER_URLS=http://127.0.0.1:6333,http://127.0.0.1:6343,http://127.0.0.1:6353 …
//
// The fake (test/fakes/qdrant-server.ts) turns into a validating proxy in front of QDRANT_URL, so the
// same tests read the real server's answers. Without QDRANT_URL this says why and exits 0: CI and
// fresh machines have no Qdrant server.
import { spawn } from 'node:child_process';

const url = process.env.QDRANT_URL?.replace(/\/+$/, '');
if (!url) {
  console.log(
    'test:qdrant-live skipped: QDRANT_URL is not set (a real Qdrant, e.g. http://127.0.0.1:6333; docs/qdrant.md shows how to build and run one here).',
  );
  process.exit(0);
}
const headers = process.env.QDRANT_API_KEY ? { 'api-key': process.env.QDRANT_API_KEY } : {};
let version;
try {
  const res = await fetch(`${url}/`, { headers, signal: AbortSignal.timeout(5000) });
  version = (await res.json()).version;
} catch (err) {
  console.error(
    `test:qdrant-live: ${url} does not answer (${err.message}); start Qdrant first (docs/qdrant.md).`,
  );
  process.exit(1);
}
const cluster = (process.env.QDRANT_CLUSTER_URLS ?? '').split(',').filter(Boolean);
console.log(
  `test:qdrant-live: Qdrant ${version} at ${url}${cluster.length ? `; cluster of ${cluster.length} nodes` : ''}`,
);

// Every test file that starts the Qdrant fake, plus the contract suite's live file.
const FILES = [
  'test/index/qdrant-live.test.ts',
  'test/index/qdrant.test.ts',
  'test/retrieve/engine-parity.test.ts',
  'test/retrieve/qdrant.test.ts',
  'test/retrieve/scores.test.ts',
  'test/ingest/qdrant.test.ts',
  'test/ingest/knowledge.test.ts',
  'test/ingest/versions.test.ts',
  'test/ingest/readiness.test.ts',
  'test/ingest/start-up.test.ts',
  'test/reliability/crash.test.ts',
  'test/reliability/tenancy.test.ts',
  'test/scale/jobs.test.ts',
  'test/scale/replicas.test.ts',
  ...(cluster.length ? ['test/live/qdrant-cluster-live.test.ts'] : []),
];
const child = spawn('npx', ['vitest', 'run', ...FILES, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, QDRANT_URL: url },
});
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
