/**
 * Peak memory of one large text file through one way into Kilde's ingest path (buildIngestPipeline
 * with the local lexical-only defaults, LanceDB in a temp dir), in a process of its own so that
 * nothing else counts: prints the RSS after start-up, the peak while ingesting (this process and its
 * worker processes, sampled every 5 ms, and getrusage's maximum) and both as multiples of the file.
 *   --via cli        (default) `IngestService.ingest` on the file, as `kilde ingest` does;
 *   --via multipart  `PUT /api/v1/ingest` on a loopback port, the file streamed as a multipart part;
 *   --via s3         the file put in s3rver (its own process, not counted), then `PUT /api/v1/ingest`
 *                    naming the object.
 * `bench:ingest` runs it; alone: npx tsx bench/ingest-large.ts <file> [INGEST_BATCH_CHUNKS] [--via …] [--trace]
 * Prints figures; asserts nothing.
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { HeadBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import { ingestSchema } from '../src/config/ingest.js';
import { parseConfig } from '../src/config/parse.js';
import { buildApp } from '../src/http/app.js';
import { lanceCacheUsage } from '../src/index/lancedb-cache.js';
import { buildIngestPipeline } from '../src/ingest/build.js';
import { createIngestPart } from '../src/ingest/part.js';
import { treeRss } from './lib/tree-rss.js';

const viaAt = process.argv.indexOf('--via');
const via = viaAt > 0 ? (process.argv[viaAt + 1] ?? 'cli') : 'cli';
if (viaAt > 0) process.argv.splice(viaAt, 2);
if (!['cli', 'multipart', 's3'].includes(via)) {
  process.stderr.write('--via is cli, multipart or s3\n');
  process.exit(2);
}
// --trace: every 5 s, this process's RSS split into V8's heap, external memory and the rest (native:
// LanceDB, Node; LanceDB's caches named), and each worker process's RSS, on stderr.
const traceAt = process.argv.indexOf('--trace');
const trace = traceAt > 0;
if (trace) process.argv.splice(traceAt, 1);
const path = process.argv[2];
if (!path) {
  process.stderr.write('usage: tsx bench/ingest-large.ts <file> [INGEST_BATCH_CHUNKS]\n');
  process.exit(2);
}
const bytes = (await stat(path)).size;
const S3_PORT = 40_000 + (process.pid % 20_000);
const S3RVER = join(
  dirname(createRequire(import.meta.url).resolve('s3rver/package.json')),
  'bin',
  's3rver.js',
);
const work = await mkdtemp(join(tmpdir(), 'kilde-bench-large-'));
const config = parseConfig(ingestSchema, {
  KILDE_DATA_DIR: work,
  EMBEDDING_PROVIDER: 'none',
  API_KEY: 'bench-key-not-served-anywhere',
  MAX_UPLOAD_BYTES: String(bytes + 1),
  EXTRACTION_MAX_TEXT_CHARS: String(bytes + 1),
  ...(process.argv[3] ? { INGEST_BATCH_CHUNKS: process.argv[3] } : {}),
  // LanceDB's cache bounds may be compared from the environment (LANCEDB_INDEX_CACHE_MB=…).
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('LANCEDB_'))),
  ...(via === 's3'
    ? {
        OBJECTSTORE_ENDPOINT: `http://127.0.0.1:${S3_PORT}`,
        OBJECTSTORE_ACCESS_KEY: 'S3RVER',
        OBJECTSTORE_SECRET_KEY: 'S3RVER',
      }
    : {}),
});
const s3 = via === 's3' ? await startS3rver(work) : undefined;
const log = pino({ level: 'warn' });
const part = via === 'cli' ? undefined : createIngestPart(config, { log });
const app = part ? await buildApp(config, { logger: log, parts: [part] }) : undefined;
if (part) await part.start?.();
const built = part ? part.pipeline() : await buildIngestPipeline(config, { log });
const origin = app ? await app.listen({ port: 0, host: '127.0.0.1' }) : '';
if (s3) await s3.put(path);
const mib = (n: number) => (n / 1024 / 1024).toFixed(0);
// The object store's own process is not Kilde's memory.
const kildeRss = () => treeRss() - (s3 ? treeRss(s3.pid) : 0);
const baseline = kildeRss();
let peak = baseline;
const t00 = performance.now();
const tracer = trace
  ? setInterval(() => {
      const m = process.memoryUsage();
      const workers = part ? [] : built.pool.pids.map((pid) => mib(treeRss(pid)));
      process.stderr.write(
        `${((performance.now() - t00) / 1000).toFixed(0)} s: main RSS ${mib(m.rss)} MiB = V8 heap ${mib(m.heapTotal)} ` +
          `(used ${mib(m.heapUsed)}) + external ${mib(m.external)} + other ${mib(m.rss - m.heapTotal - m.external)}, ` +
          `of which LanceDB's caches ${mib(lanceCacheUsage().bytes)}; ` +
          `workers ${workers.join(', ') || '-'} MiB\n`,
      );
    }, 5000)
  : undefined;
const sampler = setInterval(() => {
  peak = Math.max(peak, kildeRss());
}, 5);
try {
  const t0 = performance.now();
  const out =
    via === 'cli'
      ? await built.service.ingest(
          {
            fileId: 'large',
            filename: 'large.txt',
            collectionName: 'large',
            collectionType: 'file',
            userId: 'bench',
            overwrite: true,
            source: 'large.txt',
          },
          async () => ({ path, filename: 'large.txt', bytes }),
        )
      : await overHttp(origin, via === 's3');
  const s = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  clearInterval(tracer);
  const maxRss = process.resourceUsage().maxRSS * 1024;
  console.log(
    `large text ${mib(bytes)} MiB via ${via} (GLIBC_TUNABLES ${process.env.GLIBC_TUNABLES || 'unset'}, NODE_OPTIONS ${process.env.NODE_OPTIONS || 'unset'}): ${out.chunksCount} chunks in ${s.toFixed(1)} s; RSS after start-up ${mib(baseline)} MiB, ` +
      `peak ${mib(Math.max(peak, maxRss))} MiB = ${(Math.max(peak, maxRss) / bytes).toFixed(1)}× the file ` +
      `(${((Math.max(peak, maxRss) - baseline) / bytes).toFixed(1)}× above start-up)`,
  );
} finally {
  clearInterval(sampler);
  if (app) await app.close();
  else await built.close();
  s3?.stop();
  await rm(work, { recursive: true, force: true });
}

/** `PUT /api/v1/ingest`: the file streamed from disk as a multipart part, or the object named. */
async function overHttp(base: string, object: boolean): Promise<{ chunksCount: number }> {
  const fields = {
    file_id: 'large',
    filename: 'large.txt',
    collection_name: 'large',
    user_id: 'bench',
  };
  const headers: Record<string, string> = { authorization: `Bearer ${config.API_KEY}` };
  let body: string | ReadableStream<Uint8Array>;
  if (object) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify({ ...fields, s3_bucket: 'bench', s3_key: 'large.txt' });
  } else {
    const boundary = `----kildebench${Date.now()}`;
    headers['content-type'] = `multipart/form-data; boundary=${boundary}`;
    const head = Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('');
    const parts = async function* () {
      yield Buffer.from(
        `${head}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="large.txt"\r\n` +
          'Content-Type: text/plain\r\n\r\n',
      );
      for await (const chunk of createReadStream(path!)) yield chunk as Buffer;
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    };
    body = Readable.toWeb(Readable.from(parts())) as ReadableStream<Uint8Array>;
  }
  const res = await fetch(`${base}/api/v1/ingest`, {
    method: 'PUT',
    headers,
    body,
    ...(object ? {} : { duplex: 'half' }),
  } as RequestInit);
  const answer = (await res.json()) as { status?: boolean; chunks_count?: number };
  if (!res.ok || answer.status !== true)
    throw new Error(`ingest answered ${res.status}: ${JSON.stringify(answer)}`);
  return { chunksCount: answer.chunks_count ?? 0 };
}

/** s3rver in a process of its own (so its memory is not counted), with the file put as `bench/large.txt`. */
async function startS3rver(dir: string) {
  const data = join(dir, 's3rver');
  const child = spawn(
    process.execPath,
    [S3RVER, '-d', data, '-a', '127.0.0.1', '-p', String(S3_PORT), '-s', '--configure-bucket', 'bench'],
    { stdio: 'ignore' },
  );
  const client = new S3Client({
    endpoint: `http://127.0.0.1:${S3_PORT}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    // No aws-chunked checksum trailer on the streamed upload: s3rver would store it in the object.
    requestChecksumCalculation: 'WHEN_REQUIRED',
  });
  for (let i = 0; ; i++) {
    try {
      await client.send(new HeadBucketCommand({ Bucket: 'bench' }));
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    pid: child.pid ?? 0,
    async put(file: string) {
      await client.send(
        new PutObjectCommand({
          Bucket: 'bench',
          Key: 'large.txt',
          Body: createReadStream(file),
          ContentLength: (await stat(file)).size,
          ContentType: 'text/plain',
        }),
      );
    },
    stop() {
      client.destroy();
      child.kill();
    },
  };
}
