// npm run test:qdrant-live [vitest args]: the index contract suite and every test that runs on the
// Qdrant fake, against a real Qdrant: one node, then a three-node cluster (docs/qdrant.md says which
// versions were run and how to build them here).
//
//   QDRANT_BIN=/path/to/qdrant npm run test:qdrant-live   starts the nodes itself (one, then three),
//                                                         and runs the node-loss test on the cluster
//   QDRANT_URL=http://127.0.0.1:6333 [QDRANT_API_KEY=…]   a server already running
//   QDRANT_CLUSTER_URLS=http://…:6333,http://…:6343,…      a cluster already running (no node-loss test)
//
// The fake (test/fakes/qdrant-server.ts) turns into a validating proxy in front of the real server,
// so the same tests read the real answers. Without either variable this says why and exits 0: CI
// and fresh machines have no Qdrant server.
import { spawn } from 'node:child_process';
import { startQdrantNodes } from '../test/live/qdrant-nodes.js';

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
];
const extra = process.argv.slice(2);

function vitest(files: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn('npx', ['vitest', 'run', ...files, ...extra], {
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    child.on('exit', (code, signal) => resolve(signal ? 1 : (code ?? 1)));
  });
}

async function version(url: string): Promise<string> {
  const headers: Record<string, string> = process.env.QDRANT_API_KEY
    ? { 'api-key': process.env.QDRANT_API_KEY }
    : {};
  const res = await fetch(`${url}/`, { headers, signal: AbortSignal.timeout(5000) });
  return ((await res.json()) as { version: string }).version;
}

const bin = process.env.QDRANT_BIN;
const url = process.env.QDRANT_URL?.replace(/\/+$/, '');
const clusterUrls = (process.env.QDRANT_CLUSTER_URLS ?? '').split(',').filter(Boolean);
let failed = 0;

if (bin) {
  const one = await startQdrantNodes(bin, 1);
  console.log(`test:qdrant-live: one node, Qdrant ${await version(one.urls[0]!)} (${bin})`);
  try {
    failed += await vitest(FILES, { QDRANT_URL: one.urls[0]! });
  } finally {
    await one.close();
  }
  const three = await startQdrantNodes(bin, 3);
  console.log(`test:qdrant-live: a cluster of three nodes, ${three.urls.join(', ')}`);
  try {
    failed += await vitest(FILES, { QDRANT_URL: three.urls[0]!, QDRANT_CLUSTER_URLS: three.urls.join(',') });
  } finally {
    await three.close();
  }
  // The node-loss test starts its own cluster: it kills and restarts one of its nodes.
  failed += await vitest(['test/live/qdrant-cluster-live.test.ts'], { QDRANT_BIN: bin });
} else if (url || clusterUrls.length > 0) {
  const first = url ?? clusterUrls[0]!;
  try {
    console.log(`test:qdrant-live: Qdrant ${await version(first)} at ${first}`);
  } catch (err) {
    console.error(
      `test:qdrant-live: ${first} does not answer (${(err as Error).message}); start Qdrant first (docs/qdrant.md).`,
    );
    process.exit(1);
  }
  failed += await vitest(FILES, {
    QDRANT_URL: first,
    ...(clusterUrls.length > 0 ? { QDRANT_CLUSTER_URLS: clusterUrls.join(',') } : {}),
  });
} else {
  console.log(
    'test:qdrant-live skipped: neither QDRANT_BIN (a Qdrant binary to start) nor QDRANT_URL (a running Qdrant) is set; docs/qdrant.md shows how to build one here.',
  );
}
process.exit(failed === 0 ? 0 : 1);
