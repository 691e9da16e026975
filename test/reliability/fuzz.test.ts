import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractorServiceSchema } from '../../src/config/extraction.js';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { createExtractorPart } from '../../src/extract/sidecar-server.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { REPO, tempDir } from '../cli/helpers.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { FAKE_KEY, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { logSink } from '../helpers/app.js';
import { type FakeS3, S3_KEYS, startS3 } from '../ingest/helpers/s3.js';
import { reliabilitySettings } from './settings.js';

/**
 * Property-based fuzzing of every route of `kilde serve all` (and `kilde serve extractor`):
 * methods, paths and path parameters, headers, content types and bodies, generated from a printed
 * seed. Whatever arrives: no 5xx other than the contract's, no crash, and no stack trace or
 * internal path in any answer.
 */
const settings = reliabilitySettings('fuzz');
const RUNS = settings.long ? 3000 : 300;
const KEY = 'fuzz-key';

let s3: FakeS3;
let chat: FakeChatServer;
let weather: FakeWeather;
let app: KildeApp;
let sidecar: KildeApp;
let dataDir: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('uploads');
  await s3.put('uploads', 'u1/notes.md', '# Notes\n\nWaste is collected on Tuesdays.\n', 'text/markdown');
  await s3.put('uploads', 'u1/junk.pdf', Buffer.from('%PDF-1.7 not really'), 'application/pdf');
  chat = await startFakeChatServer();
  weather = await startFakeWeather();
  const tmp = await tempDir('kilde-fuzz-');
  dataDir = tmp.dir;
  cleanups.push(tmp.remove);
  const config = parseConfig(allSchema, {
    API_KEY: KEY,
    KILDE_DATA_DIR: dataDir,
    ENABLE_INSPECTION_API: 'true',
    OBJECTSTORE_ENDPOINT: s3.endpoint,
    OBJECTSTORE_ACCESS_KEY: S3_KEYS.accessKeyId,
    OBJECTSTORE_SECRET_KEY: S3_KEYS.secretAccessKey,
    OBJECTSTORE_ALLOWED_BUCKETS: 'uploads,other',
    AGENT_API_BASE_URL: chat.baseUrl,
    WEATHER_API_BASE_URL: weather.url,
    WEATHER_API_KEY: FAKE_KEY,
    MAX_UPLOAD_BYTES: String(256 * 1024),
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log);
  app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  cleanups.push(() => app.close());
  const sidecarConfig = parseConfig(extractorServiceSchema, { API_KEY: KEY, KILDE_DATA_DIR: dataDir });
  const part = createExtractorPart(sidecarConfig);
  sidecar = await buildApp(sidecarConfig, { logger: log, parts: [part] });
  await startParts([part]);
  cleanups.push(() => sidecar.close());
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await Promise.all([s3?.close(), chat?.close(), weather?.close()]);
});

// ---------- what every answer must satisfy ----------

/** 5xx the contracts define for these routes; with every dependency up, none is expected. */
const CONTRACT_5XX = new Set<string>([]);

const LEAKS: [string, RegExp][] = [
  ['a stack frame', /\n\s*at \S|\bat (async )?\S+ \(|node:internal/],
  ['a source location', /\.(ts|js|mjs|cjs):\d+(:\d+)?/],
  ['an internal path', /node_modules|\/work\/|file:\/\//],
];

function check(req: InjectOptions, res: LightMyRequestResponse): void {
  const what = `${req.method} ${String(req.url).slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
  if (res.statusCode >= 500) {
    let code = '';
    try {
      code = String((JSON.parse(res.body) as { code?: unknown }).code ?? '');
    } catch {}
    expect(CONTRACT_5XX.has(`${res.statusCode} ${code}`), `unexpected 5xx: ${what}`).toBe(true);
  }
  for (const [name, re] of LEAKS) expect(re.test(res.body), `${name} in: ${what}`).toBe(false);
  expect(res.body.includes(dataDir), `the data directory in: ${what}`).toBe(false);
  expect(res.body.includes(REPO), `the repository path in: ${what}`).toBe(false);
}

/** Answers per route family and status, printed at the end: the fuzz must reach past the gates. */
const seen = new Map<string, Map<number, number>>();
let family = '';

async function send(target: KildeApp, req: InjectOptions): Promise<void> {
  const res = await target.inject(req);
  const counts = seen.get(family) ?? new Map<number, number>();
  counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
  seen.set(family, counts);
  check(req, res);
}

// ---------- generators ----------

/** A fuzzed value as query-string text (objects from fast-check may have no usable toString). */
const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

const printable = (max: number) =>
  fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    maxLength: max,
  });
/** Any Unicode text, control characters and lone surrogates included. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 4 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '../x',
    '..',
    '%00',
    "' OR 1=1 --",
    // s3rver stores keys as file names: a key segment of 255+ characters is its own 500, not Kilde's.
    'x'.repeat(200),
  ),
);
const anyValue = fc.oneof(
  anyText,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);
/** A field that is usually plausible, sometimes anything. */
const field = (usual: string, ...others: string[]) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constant(usual) },
    { weight: 3, arbitrary: fc.constantFrom(usual, ...others) },
    { weight: 1, arbitrary: anyValue },
  );

/**
 * An object of plausible values with zero to three mutations (a key dropped, a value replaced by
 * anything, an unknown key added): about half the requests pass the gates and reach the pipeline,
 * the rest probe one gate at a time.
 */
function shaped(fields: Record<string, fc.Arbitrary<unknown>>, extra = true) {
  const keys = Object.keys(fields);
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('drop' as const), key: fc.constantFrom(...keys) }),
    fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...keys), value: anyValue }),
    ...(extra
      ? [fc.record({ kind: fc.constant('set' as const), key: fc.string({ maxLength: 10 }), value: anyValue })]
      : []),
  );
  return fc
    .tuple(
      fc.record(fields),
      fc.oneof(
        { weight: 4, arbitrary: fc.constant([]) },
        { weight: 4, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) },
      ),
    )
    .map(([base, mutations]) => {
      const out: Record<string, unknown> = { ...base };
      for (const m of mutations) {
        if (m.kind === 'drop') delete out[m.key];
        else out[m.key] = m.value;
      }
      return out;
    });
}

const auth = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Record<string, string>>({ authorization: `Bearer ${KEY}` }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Record<string, string>>(
      {},
      { authorization: 'Bearer wrong' },
      { authorization: `bearer ${KEY}` },
      { authorization: 'Basic Zm9vOmJhcg==' },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${KEY} extra` },
    ),
  },
);
const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=utf-16',
    'multipart/form-data',
    'multipart/form-data; boundary=',
    'multipart/form-data; boundary=zz',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/octet-stream',
    '*/*',
    '',
  ),
  printable(40),
);
const extraHeaders = fc.option(
  fc.record(
    {
      accept: fc.constantFrom(
        'application/json',
        'text/event-stream',
        'application/json, text/event-stream',
        '*/*',
        'x',
      ),
      'x-request-id': printable(200),
      connection: fc.constantFrom('close', 'keep-alive', 'upgrade'),
      'content-encoding': fc.constantFrom('gzip', 'br', 'identity', 'x'),
      origin: fc.constantFrom('http://localhost', 'https://evil.example', 'null'),
      'mcp-session-id': printable(40),
      'mcp-protocol-version': fc.constantFrom('2025-06-18', '2024-11-05', 'x'),
    },
    { requiredKeys: [] },
  ),
  { freq: 3, nil: {} },
);
const method = fc.constantFrom<NonNullable<InjectOptions['method']>>(
  'GET',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'HEAD',
);

/** A path parameter: any text, percent-encoded as a client would, or a raw (possibly bad) escape. */
const pathParam = fc.oneof(
  anyText.map((t) => {
    try {
      return encodeURIComponent(t);
    } catch {
      return encodeURIComponent(t.replace(/[\ud800-\udfff]/g, '?'));
    }
  }),
  fc.constantFrom('%', '%zz', '%00', '%2e%2e', '..%2f..%2fetc', '%ff%fe', 'a%2Fb', 'x'.repeat(3000)),
);

const ingestJson = shaped({
  bucket: field('uploads', 'other', 'UPLOADS'),
  key: field('u1/notes.md', 'u1/junk.pdf', '../other/x.md', 'u1/none.md', 'u1/./notes.md'),
  file_id: field('f1', 'f2', 'f3'),
  filename: field('notes.md', 'a.pdf', ''),
  collection_name: field('kb-1', 'file-f1', 'user-memory-u1', 'file-f2'),
  collection_type: field('file'),
  user_id: field('u1'),
  overwrite: field('true', 'no'),
});

/** A multipart body: fields and an optional file part, with a boundary that may not match. */
const multipart = fc
  .record({
    fields: shaped({
      file_id: field('f1', 'f4'),
      collection_name: field('kb-1', 'file-f4'),
      user_id: field('u1'),
      overwrite: field('true', 'false'),
    }).map((o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, asText(v)]))),
    file: fc.option(
      fc.record({
        name: fc.oneof(printable(30), fc.constantFrom('a.md', 'b.pdf', 'c.docx', 'd.html', '../../e.txt')),
        type: fc.oneof(fc.constantFrom('text/markdown', 'application/pdf', 'text/html'), printable(30)),
        bytes: fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc
            .constantFrom('# Title\n\nSome text.\n', '%PDF-1.4\n%junk', '<html><body><p>hi</p></body></html>')
            .map((t) => new TextEncoder().encode(t)),
        ),
        partName: fc.oneof(
          { weight: 8, arbitrary: fc.constant('file') },
          { weight: 1, arbitrary: fc.constantFrom('files', 'upload') },
        ),
      }),
      { freq: 8, nil: undefined },
    ),
    boundary: fc.oneof(
      { weight: 8, arbitrary: fc.constant('b0undary') },
      { weight: 1, arbitrary: fc.constant('other') },
    ),
    truncate: fc.oneof(
      { weight: 8, arbitrary: fc.constant(false) },
      { weight: 1, arbitrary: fc.constant(true) },
    ),
  })
  .map(({ fields, file, boundary, truncate }) => {
    const parts: Buffer[] = [];
    for (const [k, v] of Object.entries(fields)) {
      parts.push(Buffer.from(`--b0undary\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
    }
    if (file) {
      parts.push(
        Buffer.from(
          `--b0undary\r\nContent-Disposition: form-data; name="${file.partName}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`,
        ),
        Buffer.from(file.bytes),
        Buffer.from('\r\n'),
      );
    }
    if (!truncate) parts.push(Buffer.from('--b0undary--\r\n'));
    return {
      payload: Buffer.concat(parts),
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    };
  });

const search = shaped({
  queries: fc.array(fc.oneof(fc.constantFrom('waste', 'tuesday', 'collected'), anyText), {
    minLength: 1,
    maxLength: 3,
  }),
  messages: fc.array(
    shaped(
      {
        role: field('user', 'assistant', 'system'),
        content: fc.oneof(
          fc.constantFrom('when is waste collected?', ''),
          anyText,
          fc.constant(null),
          fc.array(shaped({ type: field('text'), text: anyText }, false), { maxLength: 3 }),
        ),
      },
      false,
    ),
    { maxLength: 3 },
  ),
  collection_names: fc.array(field('kb-1', 'file-f1', 'KB-1', 'kb_1'), { minLength: 1, maxLength: 3 }),
  k: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 20 }) }, { weight: 1, arbitrary: anyValue }),
});

const rpcMessage = shaped({
  jsonrpc: field('2.0'),
  id: fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.constant(null)),
  method: field('tools/call', 'initialize', 'tools/list', 'ping', 'notifications/initialized'),
  params: fc.oneof(
    {
      weight: 4,
      arbitrary: shaped(
        {
          name: field('get_weather', 'rewrite_concisely'),
          arguments: shaped({ city: field('Oslo', 'Nowhere'), text: anyText, units: field('metric') }),
          protocolVersion: field('2025-06-18'),
          capabilities: fc.constant({}),
          clientInfo: fc.constant({ name: 'fuzz', version: '1' }),
        },
        false,
      ),
    },
    { weight: 1, arbitrary: anyValue },
  ),
});

/** A JSON body: the route's shape (often), any JSON value, or bytes that are not JSON at all. */
function jsonBody<T>(shape: fc.Arbitrary<T>) {
  return fc.oneof(
    { weight: 4, arbitrary: shape.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
    {
      weight: 1,
      arbitrary: fc.oneof(printable(200), fc.constantFrom('', '{', '[1,', '{"a":1}garbage', 'null')),
    },
  );
}

const run = (name: string, prop: fc.IAsyncProperty<[InjectOptions]>, runs = RUNS) => {
  family = name;
  return fc.assert(prop, { seed: settings.seed, numRuns: runs, endOnFailure: true });
};

const request = (
  arb: fc.Arbitrary<Omit<InjectOptions, 'headers'> & { headers?: Record<string, string> }>,
  withType = true,
) =>
  fc
    .tuple(
      arb,
      auth,
      extraHeaders,
      withType ? fc.option(contentType, { nil: undefined }) : fc.constant(undefined),
    )
    .map(([r, a, extra, type]): InjectOptions => {
      const headers: Record<string, string> = { ...extra, ...a, ...(r.headers ?? {}) };
      if (type !== undefined) headers['content-type'] = type;
      // `content-encoding` on a body that is not encoded is part of the fuzz; on no body it is noise.
      if (r.payload === undefined) delete headers['content-encoding'];
      return { ...r, headers };
    });

describe('fuzzing every route (no 5xx but the contract’s, no crash, no internals)', {
  timeout: settings.timeoutMs,
}, () => {
  it('health, readiness, metrics and unknown routes, any method', async () => {
    const arb = request(
      fc.record({
        method,
        url: fc.oneof(
          fc.constantFrom(
            '/health',
            '/health/ready',
            '/metrics',
            '/',
            '/api/v1',
            '/docs',
            '/mcp/x',
            '/mcp-x',
          ),
          pathParam.map((p) => `/${p}`),
          fc
            .tuple(fc.constantFrom('/health', '/metrics', '/search'), printable(60))
            .map(([a, q]) => `${a}?${q}`),
        ),
      }),
    );
    await run(
      'kernel',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('PUT /api/v1/ingest with JSON object references', async () => {
    const arb = request(
      fc.record({
        method: fc.constant('PUT' as const),
        url: fc.constant('/api/v1/ingest'),
        payload: jsonBody(ingestJson),
      }),
      false,
    ).map((r) => ({ ...r, headers: { ...r.headers, 'content-type': 'application/json' } }));
    await run(
      'ingest-json',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('PUT /api/v1/ingest and POST /api/v1/extract with multipart bodies', async () => {
    const arb = fc
      .tuple(
        fc.constantFrom(['PUT', '/api/v1/ingest'] as const, ['POST', '/api/v1/extract'] as const),
        multipart,
        auth,
      )
      .map(
        ([[m, url], body, a]): InjectOptions => ({
          method: m,
          url,
          payload: body.payload,
          headers: { ...a, ...body.headers },
        }),
      );
    await run(
      'multipart',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('ingest, extract, documents and search with any content type and body', async () => {
    const arb = request(
      fc.record({
        method,
        url: fc.constantFrom('/api/v1/ingest', '/api/v1/extract', '/search', '/echo', '/api/v1/documents/x'),
        payload: fc.oneof(
          fc.uint8Array({ maxLength: 500 }).map((b) => Buffer.from(b)),
          jsonBody(fc.jsonValue()),
        ),
      }),
    );
    await run(
      'any-body',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('DELETE and GET /api/v1/documents/{file_id} with any path parameter and query', async () => {
    const arb = request(
      fc.record({
        method: fc.constantFrom('DELETE' as const, 'GET' as const),
        url: fc
          .tuple(
            pathParam,
            fc.boolean(),
            fc.record(
              {
                limit: field('1', '1000', '0', '-1', '1e3'),
                offset: field('abc', 'WzEsMl0'),
                include_content: field('full', 'preview', 'false'),
              },
              { requiredKeys: [] },
            ),
          )
          .map(([id, chunks, query]) => {
            const qs = new URLSearchParams(
              Object.entries(query).map(([k, v]): [string, string] => [k, asText(v)]),
            ).toString();
            return `/api/v1/documents/${id}${chunks ? `/chunks${qs ? `?${qs}` : ''}` : ''}`;
          }),
      }),
      false,
    );
    await run(
      'documents',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('POST /search', async () => {
    const arb = request(
      fc.record({
        method: fc.constant('POST' as const),
        url: fc.constant('/search'),
        payload: jsonBody(search),
      }),
      false,
    ).map((r) => ({ ...r, headers: { ...r.headers, 'content-type': 'application/json' } }));
    await run(
      'search',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('POST /echo and GET /weather', async () => {
    const arb = request(
      fc.oneof(
        fc.record({
          method: fc.constant('POST' as const),
          url: fc.constant('/echo'),
          payload: jsonBody(fc.record({ text: anyValue }, { requiredKeys: [] })),
          headers: fc.constant({ 'content-type': 'application/json' }),
        }),
        fc.record({
          method: fc.constant('GET' as const),
          url: fc
            .record(
              { city: field('Oslo', 'Nowhere', ''), units: field('metric', 'imperial', 'kelvin') },
              { requiredKeys: [] },
            )
            .map(
              (q) =>
                `/weather?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, asText(v)]))}`,
            ),
        }),
      ),
      false,
    );
    await run(
      'echo-weather',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('/mcp with JSON-RPC messages, batches and broken bodies', async () => {
    const arb = request(
      fc.record({
        method: fc.oneof(
          { weight: 8, arbitrary: fc.constant('POST' as const) },
          { weight: 1, arbitrary: fc.constantFrom('GET' as const, 'DELETE' as const) },
        ),
        url: fc.constant('/mcp'),
        payload: jsonBody(fc.oneof(rpcMessage, fc.array(rpcMessage, { maxLength: 3 }))),
        headers: fc.record({
          host: field('localhost:8000', '127.0.0.1', 'evil.example', 'kilde:80').map(asText),
          accept: field('application/json, text/event-stream', 'application/json', 'text/event-stream').map(
            asText,
          ),
          'content-type': field('application/json', 'text/plain', 'application/json; charset=utf-8').map(
            asText,
          ),
        }),
      }),
      false,
    );
    await run(
      'mcp',
      fc.asyncProperty(arb, (req) => send(app, req)),
    );
  });

  it('POST /extract of the extraction sidecar', async () => {
    const arb = fc.tuple(multipart, auth).map(
      ([body, a]): InjectOptions => ({
        method: 'POST',
        url: '/extract',
        payload: body.payload,
        headers: { ...a, ...body.headers },
      }),
    );
    await run(
      'sidecar',
      fc.asyncProperty(arb, (req) => send(sidecar, req)),
    );
  });

  it('is still alive and healthy afterwards', async () => {
    const lines = [...seen].map(
      ([name, counts]) =>
        `  ${name}: ${[...counts]
          .sort(([a], [b]) => a - b)
          .map(([status, n]) => `${status}×${n}`)
          .join(' ')}`,
    );
    process.stdout.write(`fuzz: answers by route family and status\n${lines.join('\n')}\n`);
    expect((await app.inject({ url: '/health' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/health/ready' })).statusCode).toBe(200);
    expect((await sidecar.inject({ url: '/health' })).statusCode).toBe(200);
  });
});
