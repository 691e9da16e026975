// npm run test:otel-live: Kilde's traces through its real OTLP/HTTP exporter to a receiver that
// decodes them with the OpenTelemetry project's own protobuf definitions (scripts/otlp-receiver.py,
// the `opentelemetry-proto` package in a virtual environment under .tmp/), once per encoding
// (http/protobuf, then http/json). `kilde serve all` runs in this process, configured by the OTEL_*
// variables alone; its embedding and rerank upstreams are the test fakes, which record the
// `traceparent` they receive. An ingest and a search are sent with a caller's `traceparent`; the
// service is closed (its spans are flushed at shutdown); then the spans the receiver decoded must
// form the expected trees. Prints each tree (docs/operations.md shows one). Without Python or the
// package registry, it says why and exits 0.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startService } from '../src/cli/serve.js';
import { startFakeOpenAIEmbeddings } from '../test/fakes/openai-embeddings.js';
import { startFakeRerankServer } from '../test/fakes/rerank.js';

const VENV = '.tmp/otel-venv';
const PY = join(VENV, 'bin', 'python');
const SPEC = 'opentelemetry-proto>=1.30';
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const KEY = 'otel-live-key-0123456789';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: number;
  endNs: number;
  status: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  resource: Record<string, unknown>;
}

let failed = 0;
function check(name: string, ok: boolean, detail = '') {
  if (!ok) failed += 1;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
}
function skip(reason: string): never {
  console.log(`SKIP test:otel-live: ${reason}`);
  process.exit(0);
}

function ensureReceiver(): void {
  const imports = () =>
    spawnSync(PY, ['-c', 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2'], {
      stdio: 'ignore',
    }).status === 0;
  if (existsSync(PY) && imports()) return;
  if (spawnSync('python3', ['-m', 'venv', '--help'], { stdio: 'ignore' }).status !== 0) {
    skip('python3 -m venv is not available (apt-get install python3-venv)');
  }
  if (!existsSync(PY) && spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' }).status !== 0) {
    skip(`python3 -m venv ${VENV} failed`);
  }
  console.log(`installing ${SPEC} into ${VENV} (pip)...`);
  const pip = spawnSync(PY, ['-m', 'pip', 'install', '-q', SPEC], { stdio: 'inherit' });
  if (pip.status !== 0) skip(`pip install ${SPEC} failed (no package registry?)`);
  if (!imports()) skip(`${SPEC} installed but does not import`);
}

async function startReceiver(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(PY, ['scripts/otlp-receiver.py', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the receiver exited (${code})`)));
  });
  const port = /listening (\d+)/.exec(line)?.[1];
  if (!port) throw new Error(`the receiver said ${line}`);
  return { url: `http://127.0.0.1:${port}`, child };
}

/** A trace as indented lines: name, duration and the attributes worth reading. */
function render(spans: ReceivedSpan[]): string[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const under = new Map<string, ReceivedSpan[]>();
  for (const s of spans) {
    const parent = ids.has(s.parentSpanId) ? s.parentSpanId : '';
    under.set(parent, [...(under.get(parent) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    for (const s of (under.get(parent) ?? []).sort((a, b) => a.startNs - b.startNs)) {
      const ms = ((s.endNs - s.startNs) / 1e6).toFixed(1);
      const shown = Object.entries(s.attributes)
        .filter(([k]) => k.startsWith('kilde.') || k === 'http.response.status_code' || k === 'url.full')
        .filter(([k]) => k !== 'kilde.request.id')
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(' ');
      lines.push(`${'  '.repeat(depth)}${s.name}  ${ms} ms${shown ? `  ${shown}` : ''}`);
      walk(s.spanId, depth + 1);
    }
  };
  walk('', 0);
  return lines;
}

async function runOnce(protocol: 'http/protobuf' | 'http/json', receiverUrl: string) {
  const [embed, rerank] = await Promise.all([
    startFakeOpenAIEmbeddings({ dim: 128 }),
    startFakeRerankServer(),
  ]);
  const dataDir = await mkdtemp(join(tmpdir(), 'kilde-otel-live-'));
  const traceparent = (n: number) =>
    `00-${CALLER_TRACE.slice(0, 30)}${String(n).padStart(2, '0')}-${CALLER_SPAN}-01`;
  const ingestTrace = traceparent(1).split('-')[1]!;
  const searchTrace = traceparent(2).split('-')[1]!;
  const before = ((await (await fetch(`${receiverUrl}/spans`)).json()) as { spans: ReceivedSpan[] }).spans
    .length;
  try {
    const running = await startService('all', {
      HOST: '127.0.0.1',
      PORT: '0',
      API_KEY: KEY,
      KILDE_DATA_DIR: dataDir,
      LOG_LEVEL_APP: 'warning',
      EXTRACTION_ENGINE: 'inprocess',
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_MODEL: 'hash',
      EMBEDDING_DIM: '128',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      ENABLE_HYBRID_SEARCH: 'true',
      ENABLE_RERANKING: 'true',
      RERANK_API_BASE_URL: rerank.url,
      RERANK_MODEL: 'bge-reranker',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'kilde-live',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=otel-live',
    });
    const auth = { authorization: `Bearer ${KEY}` };
    try {
      for (const [i, [id, text]] of [
        ['ferry', 'The ferry to Samsø leaves at nine from Hou harbour; tickets are sold on board.'],
        ['bread', 'Danish rye bread (rugbrød) is dark, dense and made with sourdough and whole grains.'],
      ].entries()) {
        const form = new FormData();
        form.set('file_id', id!);
        form.set('collection_name', 'live');
        form.set('user_id', 'u1');
        form.set('file', new Blob([text!], { type: 'text/plain' }), `${id}.txt`);
        const res = await fetch(`${running.address}/api/v1/ingest`, {
          method: 'PUT',
          headers: { ...auth, ...(i === 0 ? { traceparent: traceparent(1) } : {}) },
          body: form,
        });
        check(
          `${protocol}: PUT /api/v1/ingest ${id}`,
          res.status === 200,
          `${res.status} ${await res.text()}`,
        );
      }
      const res = await fetch(`${running.address}/search`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', traceparent: traceparent(2) },
        body: JSON.stringify({ queries: ['when does the ferry leave'], collection_names: ['live'], k: 2 }),
      });
      check(`${protocol}: POST /search`, res.status === 200, String(res.status));
    } finally {
      // Shutting down flushes the batched spans to the receiver.
      await running.app.close();
    }
    const got = (
      (await (await fetch(`${receiverUrl}/spans`)).json()) as {
        spans: ReceivedSpan[];
        requests: { contentType: string }[];
      }
    ).spans.slice(before);
    const wantType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
    const { requests } = (await (await fetch(`${receiverUrl}/spans`)).json()) as {
      requests: { contentType: string }[];
    };
    check(
      `${protocol}: sent as ${wantType}`,
      requests.at(-1)?.contentType === wantType,
      requests.at(-1)?.contentType,
    );
    check(
      `${protocol}: resource`,
      got.every(
        (s) =>
          s.resource['service.name'] === 'kilde-live' &&
          s.resource['deployment.environment.name'] === 'otel-live',
      ),
      JSON.stringify(got[0]?.resource),
    );

    for (const [what, traceId, root, stages] of [
      [
        'ingest',
        ingestTrace,
        'PUT /api/v1/ingest',
        [
          'kilde.ingest.receive',
          'kilde.ingest.file',
          'kilde.ingest.convert',
          'kilde.ingest.chunk',
          'kilde.ingest.dense',
          'kilde.ingest.sparse',
          'kilde.ingest.write',
          'kilde.ingest.publish',
        ],
      ],
      [
        'search',
        searchTrace,
        'POST /search',
        [
          'kilde.search.queries',
          'kilde.search',
          'kilde.search.embed',
          'kilde.search.analyse',
          'kilde.search.hybrid',
          'kilde.search.rerank',
        ],
      ],
    ] as const) {
      const trace = got.filter((s) => s.traceId === traceId);
      const server = trace.find((s) => s.name === root);
      check(
        `${protocol}: ${what}: ${root} continues the caller's trace`,
        server?.parentSpanId === CALLER_SPAN,
        server?.parentSpanId,
      );
      const names = new Set(trace.map((s) => s.name));
      const missing = stages.filter((n) => !names.has(n));
      check(
        `${protocol}: ${what}: every stage span`,
        missing.length === 0,
        missing.length ? `missing ${missing.join(', ')}` : `${trace.length} spans`,
      );
      const ids = new Set(trace.map((s) => s.spanId));
      const orphans = trace.filter((s) => s !== server && !ids.has(s.parentSpanId));
      check(`${protocol}: ${what}: one tree`, orphans.length === 0, orphans.map((s) => s.name).join(', '));
      console.log(`\n${what} trace ${traceId} (${protocol}):\n${render(trace).join('\n')}\n`);
    }
    const traceOf = (h: unknown) => String(h ?? '').split('-')[1];
    const embedTraces = new Set(embed.requests.map((r) => traceOf(r.headers.traceparent)));
    check(
      `${protocol}: the embedding calls carried the ingest's and the search's trace`,
      embedTraces.has(ingestTrace) && embedTraces.has(searchTrace),
      [...embedTraces].join(', '),
    );
    check(
      `${protocol}: the rerank call carried the search's trace`,
      rerank.requests.some((r) => traceOf(r.headers.traceparent) === searchTrace),
    );
  } finally {
    await Promise.all([embed.close(), rerank.close()]);
    await rm(dataDir, { recursive: true, force: true });
  }
}

ensureReceiver();
const receiver = await startReceiver();
try {
  await runOnce('http/protobuf', receiver.url);
  await runOnce('http/json', receiver.url);
} finally {
  receiver.child.kill();
}
console.log(failed === 0 ? 'test:otel-live: all checks passed' : `test:otel-live: ${failed} check(s) failed`);
process.exit(failed === 0 ? 0 : 1);
