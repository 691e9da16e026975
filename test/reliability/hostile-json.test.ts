import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { BODY_LIMITS } from '../../src/http/body-limits.js';
import { createLogger } from '../../src/http/logger.js';
import { logSink } from '../helpers/app.js';
import { reliabilitySettings } from './settings.js';

/**
 * Hostile JSON bodies on every JSON route of `kilde serve all` (issue 31, "Trust"): a body within its
 * route's byte limit but with hundreds of thousands of keys, a very long array of objects, or very
 * deep nesting, sent with no key and with the main key (`/mcp` has no bearer guard by default, so
 * nothing but the body's limits stands before its parse). Each is refused before it is parsed, and
 * `/health` keeps answering while they arrive: counted, with probes that each give up after a
 * generous time-out, and none may.
 */
const settings = reliabilitySettings('hostile-json');
const KEY = 'hostile-json-key-0123456789';
/** The repro body was 3.7 MiB; routes with a smaller byte limit get just under theirs. */
const MAX_BODY = 3.7 * 1024 * 1024;
/** A /health answer never takes this long unless the event loop is held (the bug took 1–19 s). */
const PROBE_TIMEOUT_MS = 2000;

type Route = {
  method: 'POST' | 'PUT';
  path: string;
  bytes: number;
  /** Status without a key (the route's bearer check answers before the body is read). */
  anonymous: number;
  /**
   * Shapes within the route's limits, because its schema takes that much: they are sent without
   * the key only (401 before the body is read). With the key they would be parsed, which is the
   * route's own bounded work for a caller it trusts (eval: 500,000 judgements).
   */
  admits?: string[];
};

const ROUTES: Route[] = [
  { method: 'POST', path: '/mcp', bytes: BODY_LIMITS.mcp, anonymous: 413 },
  { method: 'POST', path: '/search', bytes: BODY_LIMITS.search, anonymous: 401 },
  // Dify's envelope: a missing key is its 403 (error_code 1001).
  { method: 'POST', path: '/retrieval', bytes: BODY_LIMITS.search, anonymous: 403 },
  // 500,000 judgements are 500,000 keys in nested objects: the tool call's arguments fit.
  {
    method: 'POST',
    path: '/api/v1/eval',
    bytes: BODY_LIMITS.eval,
    anonymous: 401,
    admits: ['many keys in a tool call'],
  },
  { method: 'PUT', path: '/api/v1/ingest', bytes: BODY_LIMITS.ingest, anonymous: 401 },
  { method: 'POST', path: '/api/v1/jobs', bytes: BODY_LIMITS.ingest, anonymous: 401 },
  { method: 'POST', path: '/echo', bytes: BODY_LIMITS.echo, anonymous: 401 },
  {
    method: 'POST',
    path: '/api/v1/documents/f/versions/v/restore',
    bytes: BODY_LIMITS.default,
    anonymous: 401,
  },
  // No such route: the kernel's default limits still apply to what it would read.
  { method: 'POST', path: '/no-such-route', bytes: BODY_LIMITS.default, anonymous: 413 },
];

const TOO_COMPLEX = 'Request body too complex: more than \\d+ [a-z ]+';
/** The 413 of each route's error body (the kernel's, ingestion's, Dify's, JSON-RPC). */
const REFUSALS: Record<string, RegExp> = {
  kernel: new RegExp(`^\\{"detail":"${TOO_COMPLEX}","code":"INVALID_REQUEST"\\}$`),
  '/mcp': new RegExp(
    `^\\{"jsonrpc":"2\\.0","error":\\{"code":-32000,"message":"${TOO_COMPLEX}"\\},"id":null\\}$`,
  ),
  '/retrieval': new RegExp(`^\\{"error_code":413,"error_msg":"${TOO_COMPLEX}"\\}$`),
  ...Object.fromEntries(
    ['/api/v1/ingest', '/api/v1/jobs', '/api/v1/documents/f/versions/v/restore'].map((path) => [
      path,
      new RegExp(`^\\{"status":false,"error":"${TOO_COMPLEX}","code":"INVALID_REQUEST"\\}$`),
    ]),
  ),
};

/** `{"k0":0,"k1":1,…}` of about `bytes` bytes (the many-keys body). */
function manyKeys(bytes: number): string {
  const parts: string[] = [];
  let size = 2;
  for (let i = 0; size < bytes - 32; i++) {
    const part = `"k${i}":${i}`;
    parts.push(part);
    size += part.length + 1;
  }
  return `{${parts.join(',')}}`;
}

/** The repro: a `tools/call` whose arguments hold the many keys (the SDK's zod walks them). */
function manyArguments(bytes: number): string {
  const head =
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_knowledge","arguments":';
  return `${head}${manyKeys(bytes - head.length - 2)}}}`;
}

/** `{"data":[{"a":0,"b":[0,0]},…]}`: one long array of small objects. */
function largeObject(bytes: number): string {
  const item = '{"a":0,"b":[0,0]}';
  const n = Math.floor((bytes - 32) / (item.length + 1));
  return `{"data":[${Array.from({ length: n }, () => item).join(',')}]}`;
}

/** `[[[[…]]]]` as deep as fits. */
function deep(bytes: number): string {
  const n = Math.min(Math.floor((bytes - 32) / 2), 200_000);
  return `${'['.repeat(n)}${']'.repeat(n)}`;
}

/** The other repro: an `initialize` with the many keys beside its members. */
function manyMembers(bytes: number): string {
  const head = '{"jsonrpc":"2.0","id":1,"method":"initialize",';
  return `${head}${manyKeys(bytes - head.length).slice(1)}`;
}

const SHAPES = {
  'many keys': manyKeys,
  'many keys beside a message': manyMembers,
  'many keys in a tool call': manyArguments,
  'large object': largeObject,
  deep,
} as const;

let app: KildeApp;
let url: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'kilde-hostile-json-'));
  const config = parseConfig(allSchema, {
    API_KEY: KEY,
    KILDE_DATA_DIR: dataDir,
    EMBEDDING_PROVIDER: 'none',
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log);
  app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Probes /health back to back until `stop` is set; counts the probes and those that timed out. */
function probeHealth() {
  const state = {
    stop: false,
    probes: 0,
    timedOut: 0,
    failed: 0,
    during: '',
    timedOutDuring: [] as string[],
  };
  const waiting: (() => void)[] = [];
  const done = (async () => {
    while (!state.stop) {
      try {
        const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
        await res.arrayBuffer();
        if (res.status !== 200) state.failed++;
      } catch (err) {
        if ((err as Error).name === 'TimeoutError') {
          state.timedOut++;
          state.timedOutDuring.push(state.during);
        } else state.failed++;
      }
      state.probes++;
      for (const w of waiting.splice(0)) w();
    }
  })();
  return {
    state,
    /** Resolves when the next probe has answered (or given up). */
    next: () => new Promise<void>((resolve) => waiting.push(resolve)),
    stop: async () => {
      state.stop = true;
      await done;
    },
  };
}

describe('hostile JSON bodies on every JSON route', { timeout: settings.timeoutMs }, () => {
  it('are refused before they are parsed, and /health answers throughout', async () => {
    // Built before the probes start: making a body is the test's own work on the shared loop.
    const bodies = new Map<string, string>();
    const bodyOf = (shape: keyof typeof SHAPES, bytes: number) => {
      const size = Math.min(bytes - 1, MAX_BODY);
      const id = `${shape}:${size}`;
      if (!bodies.has(id)) bodies.set(id, SHAPES[shape](size));
      return bodies.get(id)!;
    };
    const cases = ROUTES.flatMap((route) =>
      (Object.keys(SHAPES) as (keyof typeof SHAPES)[]).flatMap((shape) =>
        [false, true]
          .filter((withKey) => !(withKey && route.admits?.includes(shape)))
          .map((withKey) => ({ route, shape, withKey, body: bodyOf(shape, route.bytes) })),
      ),
    );
    for (const c of cases) expect(Buffer.byteLength(c.body)).toBeLessThan(c.route.bytes);

    const health = probeHealth();
    const answers: string[] = [];
    const wrong: string[] = [];
    try {
      for (const { route, shape, withKey, body } of cases) {
        health.state.during = `${route.method} ${route.path} ${shape} ${withKey ? 'key' : 'no key'}`;
        const res = await fetch(`${url}${route.path}`, {
          method: route.method,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(withKey ? { authorization: `Bearer ${KEY}` } : {}),
          },
          body,
        });
        const text = await res.text();
        const expected = withKey || route.path === '/mcp' ? 413 : route.anonymous;
        const answer = `${route.method} ${route.path} ${shape} ${withKey ? 'key' : 'no key'}: ${res.status}`;
        answers.push(answer);
        const refusal = REFUSALS[route.path] ?? REFUSALS.kernel!;
        if (res.status !== expected || (expected === 413 && !refusal.test(text))) {
          wrong.push(`${answer}, expected ${expected}: ${text.slice(0, 200)}`);
        }
        // The next request goes once /health has answered again: every request is followed by a probe.
        await health.next();
      }
    } finally {
      await health.stop();
    }
    // Which request a timed-out probe overlapped, if any.
    expect(health.state.timedOutDuring).toEqual([]);
    expect(health.state.timedOut).toBe(0);
    expect(health.state.failed).toBe(0);
    expect(health.state.probes).toBeGreaterThanOrEqual(cases.length);
    expect(wrong).toEqual([]);
  });
});
