/**
 * Ingestion jobs on Redis: files/s with 1, 2 and 4 `kilde serve worker` processes, and what a job
 * costs over a direct `PUT /api/v1/ingest` of the same file. Real processes (dist/, as `kilde`
 * runs), a real `redis-server`, one index shared over HTTP (the OpenAPI-checking Qdrant fake) and a
 * near-zero-cost embedder (hashed vectors, 16 dimensions), so the figures are Kilde's own overhead:
 * queueing, spooling, the per-file lease, the pipeline and the index calls.
 * Prints figures; asserts nothing. Needs `redis-server` on the PATH and a built dist/ (`npm run build`).
 * Usage: npm run bench:jobs [-- --files N --workers 1,2,4 --latency M]
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Job } from '../src/ingest/jobs/job.js';
import { cleanEnv, Server } from '../test/cli/helpers.js';
import { startFakeOpenAIEmbeddings } from '../test/fakes/openai-embeddings.js';
import { startQdrantFake } from '../test/fakes/qdrant-server.js';
import { startRedis } from '../test/helpers/redis.js';
import { multipartBody } from '../test/ingest/helpers/harness.js';
import { percentile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '300' },
    workers: { type: 'string', default: '1,2,4' },
    latency: { type: 'string', default: '40' },
  },
});
const FILES = Number(values.files);
const WORKER_COUNTS = values.workers.split(',').map(Number);
const LATENCY_N = Number(values.latency);
const AUTH = { authorization: 'Bearer bench-key' };
const listening = /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"kilde listening"/;

if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
  process.stderr.write('bench:jobs needs redis-server (apt-get install redis-server)\n');
  process.exit(2);
}

const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-jobs-'));
const [redis, qdrant, embed] = await Promise.all([
  startRedis(),
  startQdrantFake(),
  startFakeOpenAIEmbeddings({ dim: 16 }),
]);
const env = (name: string, extra: Record<string, string> = {}) =>
  cleanEnv({
    API_KEY: 'bench-key',
    KILDE_DATA_DIR: join(dir, name),
    VECTORDB_URI: qdrant.url,
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    EMBEDDING_MODEL: 'fake-embed',
    EMBEDDING_DIM: '16',
    EXTRACTION_ENGINE: 'inprocess',
    EXTRACTION_WORKERS: '1',
    REDIS_URL: redis.url,
    JOBS_SPOOL_DIR: join(dir, 'spool'),
    JOBS_CONCURRENCY: '4',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL_APP: 'warn',
    ...extra,
  });
async function start(args: string[], e: NodeJS.ProcessEnv) {
  const server = Server.start(args, { ...e, LOG_LEVEL_APP: 'info' });
  const url = (await server.waitFor(listening, 120_000))[1]!;
  return { server, url };
}

const text = (i: number) =>
  `Note ${i}. The grey heron stands in the marsh and waits for fish near the reeds at dawn. ` +
  `It flies low over the water when the tide turns, and the wren sings in the hedge.`;

function form(fileId: string, collection: string, i: number) {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: collection, user_id: 'bench' },
    { name: `${fileId}.txt`, content: text(i), type: 'text/plain' },
  );
  return { body: new Uint8Array(body), headers: { ...AUTH, ...headers } };
}

async function submit(url: string, fileId: string, collection: string, i: number): Promise<Job> {
  const f = form(fileId, collection, i);
  const res = await fetch(`${url}/api/v1/jobs`, { method: 'POST', headers: f.headers, body: f.body });
  if (res.status !== 202) throw new Error(`submit: ${res.status} ${await res.text()}`);
  return (await res.json()) as Job;
}

/** Follows a job's SSE stream to its end. */
async function finished(url: string, id: string): Promise<Job> {
  const res = await fetch(`${url}/api/v1/jobs/${id}/events`, { headers: AUTH });
  const raw = await res.text();
  const last = raw
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .at(-1);
  return JSON.parse(last!.slice(6)) as Job;
}

const api = await start(['serve', 'ingest'], env('api', { JOBS_WORKER_ENABLED: 'false' }));
const rows: string[] = [];
try {
  for (const n of WORKER_COUNTS) {
    const workers = [];
    for (let i = 0; i < n; i++) workers.push(await start(['serve', 'worker'], env(`w${n}-${i}`)));
    const collection = `bench-${n}`;
    const t0 = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < FILES; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, FILES - i) }, (_, k) =>
          submit(api.url, `f${n}-${i + k}`, collection, i + k),
        ),
      );
      ids.push(...batch.map((j) => j.job_id));
    }
    const submitted = (performance.now() - t0) / 1000;
    const ends = await Promise.all(ids.map((id) => finished(api.url, id)));
    const seconds = (performance.now() - t0) / 1000;
    const failed = ends.filter((j) => j.state !== 'done').length;
    rows.push(
      `| ${n} | ${FILES} | ${seconds.toFixed(1)} | ${(FILES / seconds).toFixed(1)} | ${submitted.toFixed(1)} | ${failed} | ${loadavg()[0]!.toFixed(1)} |`,
    );
    process.stderr.write(`${n} worker(s): ${(FILES / seconds).toFixed(1)} files/s\n`);

    if (n === WORKER_COUNTS[0]) {
      // One file at a time: a direct PUT against a job (POST + its events to the end).
      const direct: number[] = [];
      const viaJob: number[] = [];
      for (let i = 0; i < LATENCY_N; i++) {
        const f = form(`lat-${i}`, 'bench-latency', i);
        let t = performance.now();
        const res = await fetch(`${api.url}/api/v1/ingest`, {
          method: 'PUT',
          headers: f.headers,
          body: f.body,
        });
        await res.text();
        direct.push(performance.now() - t);
        t = performance.now();
        const job = await submit(api.url, `lat-${i}`, 'bench-latency', i);
        await finished(api.url, job.job_id);
        viaJob.push(performance.now() - t);
      }
      const d = percentile(
        [...direct].sort((a, b) => a - b),
        50,
      );
      const j = percentile(
        [...viaJob].sort((a, b) => a - b),
        50,
      );
      process.stdout.write(
        `\nOne file at a time (${LATENCY_N} files, ${n} worker process): direct PUT median ${d.toFixed(1)} ms, ` +
          `job (POST + SSE to done) median ${j.toFixed(1)} ms, overhead ${(j - d).toFixed(1)} ms per file ` +
          `(load ${loadavg()[0]!.toFixed(1)})\n`,
      );
    }
    await Promise.all(workers.map((w) => w.server.stop()));
  }
  process.stdout.write(
    `\n| worker processes | files | seconds | files/s | submit s | failed | load avg |\n|---|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
  );
} finally {
  await api.server.stop();
  await Promise.all([redis.stop(), qdrant.close(), embed.close()]);
  await rm(dir, { recursive: true, force: true });
}
