/**
 * `npm run bench:tracing`: what traces cost a search. `kilde serve all` runs in a child process
 * (hybrid search with reranking: embed, analyse, hybrid and rerank spans plus two CLIENT spans per
 * search), its embedding and rerank upstreams the test fakes in that same process; the child ingests
 * a few files, warms up, then sends `--searches` searches over loopback one at a time and prints
 * the CPU time of the whole process (all threads: client, server, fakes, LanceDB) per search.
 * Modes, alternated round by round so each sees the same machine load:
 *
 * - `off`: `OTEL_TRACES_EXPORTER` unset (the default): no SDK loaded, no span made;
 * - `on`: `OTEL_TRACES_EXPORTER=otlp`, every span batched, encoded as protobuf and sent to a sink in
 *   the parent process that answers 200.
 *
 * First, in this process, the cost of the spans alone (`micro`). Asserts nothing.
 * Usage: npm run bench:tracing -- [--rounds 3 --searches 400 --micro 20000]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    child: { type: 'string' },
    sink: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    searches: { type: 'string', default: '400' },
    micro: { type: 'string', default: '20000' },
  },
});
const SEARCHES = Number(values.searches);

if (values.child) {
  await child(values.child as 'off' | 'on', values.sink ?? '');
} else {
  await parent();
}

async function child(mode: 'off' | 'on', sink: string): Promise<void> {
  const { startService } = await import('../src/cli/serve.js');
  const { startFakeOpenAIEmbeddings } = await import('../test/fakes/openai-embeddings.js');
  const { startFakeRerankServer } = await import('../test/fakes/rerank.js');
  const [embed, rerank] = await Promise.all([
    startFakeOpenAIEmbeddings({ dim: 128 }),
    startFakeRerankServer(),
  ]);
  const dataDir = await mkdtemp(join(tmpdir(), 'kilde-bench-tracing-'));
  const key = 'bench-tracing-key-0123456789';
  const running = await startService('all', {
    HOST: '127.0.0.1',
    PORT: '0',
    API_KEY: key,
    KILDE_DATA_DIR: dataDir,
    LOG_LEVEL_APP: 'error',
    EXTRACTION_ENGINE: 'inprocess',
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '128',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ENABLE_HYBRID_SEARCH: 'true',
    ENABLE_RERANKING: 'true',
    RERANK_API_BASE_URL: rerank.url,
    RERANK_MODEL: 'bench',
    ...(mode === 'on' ? { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: sink } : {}),
  });
  const auth = { authorization: `Bearer ${key}` };
  const words = [
    'ferry',
    'harbour',
    'bread',
    'rye',
    'tax',
    'income',
    'bicycle',
    'lane',
    'island',
    'lighthouse',
  ];
  for (let i = 0; i < 20; i++) {
    const form = new FormData();
    form.set('file_id', `f${i}`);
    form.set('collection_name', 'bench');
    form.set('user_id', 'u1');
    const text = Array.from({ length: 60 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' ');
    form.set('file', new Blob([text], { type: 'text/plain' }), `f${i}.txt`);
    const res = await fetch(`${running.address}/api/v1/ingest`, { method: 'PUT', headers: auth, body: form });
    if (res.status !== 200) throw new Error(`ingest ${res.status}: ${await res.text()}`);
  }
  const search = async (i: number) => {
    const res = await fetch(`${running.address}/search`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        queries: [`${words[i % 10]} ${words[(i + 3) % 10]}`],
        collection_names: ['bench'],
        k: 5,
      }),
    });
    if (res.status !== 200) throw new Error(`search ${res.status}`);
    await res.arrayBuffer();
  };
  for (let i = 0; i < 100; i++) await search(i);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < SEARCHES; i++) await search(i);
  const used = process.cpuUsage(cpu);
  const wall = performance.now() - started;
  await running.app.close();
  await Promise.all([embed.close(), rerank.close()]);
  await rm(dataDir, { recursive: true, force: true });
  process.stdout.write(
    `${JSON.stringify({ mode, cpuUsPerSearch: (used.user + used.system) / SEARCHES, wallMsPerSearch: wall / SEARCHES })}\n`,
  );
  process.exit(0);
}

/**
 * The spans of one search (9: request, queries, search, embed + its CLIENT span, analyse, hybrid,
 * rerank + its CLIENT span) made around empty stages, CPU per tree: plain awaits (the floor),
 * `inSpan` with tracing off, and on with a batching processor whose exporter drops the batches
 * (encoding and sending are the child runs' business).
 */
async function micro(n: number): Promise<void> {
  const { inSpan } = await import('../src/telemetry/tracing.js');
  const { installTracing } = await import('../src/telemetry/sdk.js');
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace');
  const stage = async () => undefined;
  const plain = async () => {
    await stage();
    await stage();
    await stage();
    await stage();
    await stage();
    await stage();
    await stage();
    await stage();
    await stage();
  };
  const spanned = () =>
    inSpan('POST /search', {}, async () => {
      await inSpan('kilde.search.queries', {}, stage);
      await inSpan('kilde.search', { 'kilde.search.mode': 'hybrid' }, async () => {
        await inSpan('kilde.search.embed', {}, () => inSpan('POST', {}, stage));
        await inSpan('kilde.search.analyse', {}, stage);
        await inSpan('kilde.search.hybrid', { 'kilde.hits.count': 10 }, stage);
        await inSpan('kilde.search.rerank', {}, () => inSpan('POST', {}, stage));
      });
    });
  const measure = async (fn: () => Promise<unknown>) => {
    for (let i = 0; i < 2000; i++) await fn();
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / n;
  };
  const floor = await measure(plain);
  const off = await measure(spanned);
  const exporter = {
    export: (_spans: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }),
    shutdown: async () => undefined,
  };
  const tracing = installTracing({
    processors: [new BatchSpanProcessor({ exporter, maxQueueSize: 100_000 })],
  });
  const on = await measure(spanned);
  await tracing.shutdown();
  console.log(
    `one search's 9 spans around empty stages, CPU per search (${n} each): plain awaits ${floor.toFixed(1)} µs, tracing off ${off.toFixed(1)} µs, tracing on ${on.toFixed(1)} µs (spans made and batched, not sent)`,
  );
}

async function parent(): Promise<void> {
  await micro(Number(values.micro));
  let spansBytes = 0;
  const sink = createServer((req, res) => {
    req.on('data', (c: Buffer) => {
      spansBytes += c.length;
    });
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const results: Record<string, { cpu: number[]; wall: number[] }> = {
    off: { cpu: [], wall: [] },
    on: { cpu: [], wall: [] },
  };
  console.log(`bench:tracing: ${SEARCHES} searches per run, load average ${loadavg()[0]!.toFixed(2)}`);
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const mode of round % 2 === 0 ? ['off', 'on'] : ['on', 'off']) {
      const out = await new Promise<string>((resolve, reject) => {
        const c = spawn(
          process.execPath,
          [
            ...process.execArgv,
            new URL(import.meta.url).pathname,
            '--child',
            mode,
            '--sink',
            sinkUrl,
            '--searches',
            String(SEARCHES),
          ],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        let text = '';
        c.stdout.on('data', (d: Buffer) => {
          text += d.toString();
        });
        c.on('exit', (code) =>
          code === 0 ? resolve(text) : reject(new Error(`child ${mode} exited ${code}`)),
        );
      });
      const r = JSON.parse(out.trim().split('\n').at(-1)!) as {
        cpuUsPerSearch: number;
        wallMsPerSearch: number;
      };
      results[mode]!.cpu.push(r.cpuUsPerSearch);
      results[mode]!.wall.push(r.wallMsPerSearch);
      console.log(
        `round ${round + 1} ${mode.padEnd(3)}: ${(r.cpuUsPerSearch / 1000).toFixed(3)} ms CPU, ${r.wallMsPerSearch.toFixed(3)} ms wall per search`,
      );
    }
  }
  sink.close();
  if (results.off!.cpu.length === 0 || results.on!.cpu.length === 0) return;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const off = median(results.off!.cpu);
  const on = median(results.on!.cpu);
  console.log(
    `median CPU per search: off ${(off / 1000).toFixed(3)} ms, on ${(on / 1000).toFixed(3)} ms (${(((on - off) / off) * 100).toFixed(1)} %, +${((on - off) / 1000).toFixed(3)} ms); ${spansBytes} bytes of spans received; load average ${loadavg()[0]!.toFixed(2)}`,
  );
}
