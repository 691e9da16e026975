import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { z } from 'zod';
import {
  batchSchema,
  countSchema,
  createCollectionSchema,
  createIndexSchema,
  deleteSchema,
  facetSchema,
  querySchema,
  scrollSchema,
  setPayloadSchema,
  upsertSchema,
} from './qdrant/bodies.js';
import { UnsupportedFilter } from './qdrant/filter.js';
import { FakeHttpError } from './qdrant/model.js';
import { loadOpenApiValidator, type OpenApiValidator, type Operation } from './qdrant/openapi.js';
import { QdrantMemory } from './qdrant/store.js';

/**
 * A fake Qdrant on a loopback port. Every request is checked against Qdrant's published OpenAPI
 * document (route, query parameters, request body) and every 200 answer against the operation's
 * response schema; violations are recorded and the request is answered 400, so an adapter bug can
 * not hide behind a lenient fake. Valid requests are served from in-memory Qdrant semantics
 * (`qdrant/store.ts`).
 */
export interface QdrantFakeRequest {
  method: string;
  path: string;
  query: string;
  operationId?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
  status: number;
}

export interface QdrantFake {
  url: string;
  /**
   * `fake`: in-memory Qdrant semantics. `live`: a validating proxy in front of the real server named
   * by `QDRANT_URL` (see `startQdrantFake`).
   */
  mode: 'fake' | 'live';
  /** Every request, in order. */
  requests: QdrantFakeRequest[];
  /** Schema violations (requests and responses) and unimplemented features, human-readable. */
  violations: string[];
  /** The in-memory store (fake mode only: in live mode it stays empty; use `points`/`info`). */
  memory: QdrantMemory;
  /** Every point of a collection (named as Kilde names it), with payload and vectors, in either mode. */
  points(collection: string): Promise<QdrantStoredPoint[]>;
  /** `GET /collections/{name}`'s result, in either mode. */
  info(collection: string): Promise<Record<string, unknown>>;
  /** Delays every answer (to test client time-outs). */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export interface QdrantStoredPoint {
  id: string | number;
  payload: Record<string, unknown>;
  vector?: unknown;
}

let validator: OpenApiValidator | undefined;

type Handler = (name: string, body: unknown) => unknown;
const parse =
  <T>(schema: z.ZodType<T>, fn: (name: string, body: T) => unknown): Handler =>
  (name, body) => {
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new FakeHttpError(501, `fake does not implement: ${parsed.error.message}`);
    return fn(name, parsed.data);
  };

function handlers(m: QdrantMemory): Record<string, Handler> {
  return {
    get_collection: (name) => m.info(name),
    collection_exists: (name) => m.exists(name),
    create_collection: parse(createCollectionSchema, (n, b) => m.create(n, b)),
    create_field_index: parse(createIndexSchema, (n, b) => m.createIndex(n, b)),
    upsert_points: parse(upsertSchema, (n, b) => m.upsert(n, b)),
    delete_points: parse(deleteSchema, (n, b) => m.delete(n, b)),
    set_payload: parse(setPayloadSchema, (n, b) => m.setPayload(n, b)),
    batch_update: parse(batchSchema, (n, b) => m.batch(n, b)),
    count_points: parse(countSchema, (n, b) => m.count(n, b)),
    facet: parse(facetSchema, (n, b) => m.facet(n, b)),
    scroll_points: parse(scrollSchema, (n, b) => m.scroll(n, b)),
    query_points: parse(querySchema, (n, b) => m.query(n, b)),
    delete_collection: (name) => m.collections.delete(name),
  };
}

/**
 * Starts the fake, or, when the environment names a real server (`QDRANT_URL`, optional
 * `QDRANT_API_KEY`: `npm run test:qdrant-live`), a proxy in front of it: every request is still
 * validated against the OpenAPI document and recorded, then forwarded, and the real server's status
 * and body come back unchanged. Each proxy prefixes the collection names it forwards with its own
 * tag, so test files share one server without seeing each other's collections, and drops what it
 * created on `close()`. Tests that read the fake's memory use `points`/`info`, which work in both.
 */
export async function startQdrantFake(options: { apiKey?: string } = {}): Promise<QdrantFake> {
  validator ??= loadOpenApiValidator();
  const v = validator;
  const live = process.env.QDRANT_URL;
  if (live) {
    const nodes = (process.env.QDRANT_CLUSTER_URLS ?? live)
      .split(',')
      .map((u) => u.trim().replace(/\/+$/, ''));
    return startQdrantProxy(v, nodes.filter(Boolean), process.env.QDRANT_API_KEY, options);
  }
  const memory = new QdrantMemory();
  const table = handlers(memory);
  const requests: QdrantFakeRequest[] = [];
  const violations: string[] = [];
  let delay = 0;

  // Like Qdrant's HTTP server, the answer is gzipped when the client accepts it.
  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    const text = JSON.stringify(body);
    if (!/\bgzip\b/.test(String(res.req.headers['accept-encoding'] ?? ''))) return res.end(text);
    res.setHeader('content-encoding', 'gzip');
    res.setHeader('vary', 'accept-encoding');
    res.end(gzipSync(text));
  };
  const error = (res: ServerResponse, status: number, message: string) =>
    reply(res, status, { status: { error: message }, time: 0 });

  const server = createServer(async (req, res) => {
    const { text, url, rec } = await record(req, requests, delay);
    const answer = (status: number, body: unknown) => {
      rec.status = status;
      if (!res.destroyed) reply(res, status, body);
    };
    const fail = (status: number, message: string, violation = false) => {
      if (violation) violations.push(`${rec.method} ${rec.path}${rec.query}: ${message}`);
      rec.status = status;
      if (!res.destroyed) error(res, status, message);
    };

    if (options.apiKey !== undefined && req.headers['api-key'] !== options.apiKey) {
      return fail(401, 'Invalid API key or JWT');
    }
    const op: Operation | undefined = v.match(rec.method, rec.path);
    if (!op) return fail(404, `no such Qdrant route: ${rec.method} ${rec.path}`, true);
    rec.operationId = op.operationId;
    let body: unknown;
    if (text.length > 0) {
      if (!String(req.headers['content-type']).startsWith('application/json')) {
        return fail(400, 'body sent without content-type: application/json', true);
      }
      try {
        body = JSON.parse(text);
        rec.body = body;
      } catch {
        return fail(400, 'body is not JSON', true);
      }
    }
    const problems = v.checkRequest(op, url.searchParams, body, text.length > 0);
    if (problems.length > 0) return fail(400, `schema: ${problems.join('; ')}`, true);
    const handler = table[op.operationId];
    if (!handler) return fail(501, `fake does not implement ${op.operationId}`, true);
    try {
      const name = op.pathParams.collection_name ?? '';
      const envelope = { result: handler(name, body), status: 'ok', time: 0.0001 };
      const bad = v.checkResponse(op, envelope);
      if (bad.length > 0) violations.push(`fake answered ${op.operationId} off-schema: ${bad.join('; ')}`);
      answer(200, envelope);
    } catch (err) {
      if (err instanceof UnsupportedFilter) return fail(501, `fake filter: ${err.message}`, true);
      if (err instanceof FakeHttpError) return fail(err.status, err.message, err.status === 501);
      return fail(500, String(err), true);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    mode: 'fake',
    requests,
    violations,
    memory,
    points: async (collection) =>
      [...(memory.collections.get(collection)?.points.values() ?? [])].map((p) => ({
        id: p.id,
        payload: p.payload,
        vector: Object.fromEntries([...p.dense, ...p.sparse]),
      })),
    info: async (collection) => memory.info(collection) as Record<string, unknown>,
    setDelay(ms) {
      delay = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Reads a request, records it in `requests` (its status is filled in when it is answered) and waits
 * `delay` ms, as both fakes do before answering.
 */
async function record(
  req: IncomingMessage,
  requests: QdrantFakeRequest[],
  delay: number,
): Promise<{ text: string; url: URL; rec: QdrantFakeRequest }> {
  const text = await readBody(req);
  const url = new URL(req.url ?? '/', 'http://fake');
  const rec: QdrantFakeRequest = {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: url.search,
    headers: req.headers,
    status: 0,
  };
  requests.push(rec);
  if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  return { text, url, rec };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const COLLECTION_PATH = /^\/collections\/([^/]+)(.*)$/;

/**
 * Over a cluster (`QDRANT_CLUSTER_URLS`, comma-separated node URLs) the proxy also plays the
 * deployment the docs prescribe for read-your-writes (docs/scaling.md): a collection it sees
 * created without cluster settings gets one shard per node, two replicas and a write consistency
 * factor of two, every write is sent with `ordering=strong`, and successive requests go to the
 * nodes in turn, so a write lands on one node and the read after it on another.
 */
function clusterCreateBody(text: string, nodes: number): string {
  const body = JSON.parse(text) as Record<string, unknown>;
  body.shard_number ??= nodes;
  body.replication_factor ??= 2;
  body.write_consistency_factor ??= 2;
  return JSON.stringify(body);
}

const WRITES = new Set([
  'upsert_points',
  'delete_points',
  'set_payload',
  'batch_update',
  'create_field_index',
]);

/** The live mode of `startQdrantFake`: validate, record, rename collections, forward. */
async function startQdrantProxy(
  v: OpenApiValidator,
  nodes: string[],
  upstreamKey: string | undefined,
  options: { apiKey?: string },
): Promise<QdrantFake> {
  const upstream = nodes[0]!;
  const cluster = nodes.length > 1;
  let turn = 0;
  const tag = `kt${randomUUID().slice(0, 8)}_`;
  const requests: QdrantFakeRequest[] = [];
  const violations: string[] = [];
  const created = new Set<string>();
  let delay = 0;
  // Plain answers from the server (as Kilde asks for them): see `createQdrantHttp`.
  const upstreamHeaders = (): Record<string, string> => ({
    'content-type': 'application/json',
    'accept-encoding': 'identity',
    ...(upstreamKey ? { 'api-key': upstreamKey } : {}),
  });
  const raw = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(upstream + path, {
      method,
      headers: upstreamHeaders(),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json().catch(() => undefined)) as { result?: unknown } };
  };

  const server = createServer(async (req, res) => {
    const { text, url, rec } = await record(req, requests, delay);
    const send = (status: number, body: string) => {
      rec.status = status;
      if (res.destroyed) return;
      res.statusCode = status;
      res.setHeader('content-type', 'application/json');
      res.end(body);
    };
    const fail = (status: number, message: string) => {
      violations.push(`${rec.method} ${rec.path}${rec.query}: ${message}`);
      send(status, JSON.stringify({ status: { error: message }, time: 0 }));
    };
    if (options.apiKey !== undefined && req.headers['api-key'] !== options.apiKey) {
      rec.status = 401;
      return send(401, JSON.stringify({ status: { error: 'Invalid API key or JWT' }, time: 0 }));
    }
    const op = v.match(rec.method, rec.path);
    if (!op) return fail(404, `no such Qdrant route: ${rec.method} ${rec.path}`);
    rec.operationId = op.operationId;
    let body: unknown;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
        rec.body = body;
      } catch {
        return fail(400, 'body is not JSON');
      }
    }
    const problems = v.checkRequest(op, url.searchParams, body, text.length > 0);
    if (problems.length > 0) return fail(400, `schema: ${problems.join('; ')}`);
    const m = COLLECTION_PATH.exec(url.pathname);
    const path = m ? `/collections/${tag}${m[1]}${m[2]}` : url.pathname;
    if (m && op.operationId === 'create_collection') created.add(`${tag}${m[1]}`);
    let sent = text;
    let search = url.search;
    if (cluster && op.operationId === 'create_collection' && text)
      sent = clusterCreateBody(text, nodes.length);
    if (cluster && WRITES.has(op.operationId) && !url.searchParams.has('ordering')) {
      search = `${search ? `${search}&` : '?'}ordering=strong`;
    }
    const node = cluster ? nodes[turn++ % nodes.length]! : upstream;
    try {
      const forwarded = await fetch(node + path + search, {
        method: rec.method,
        headers: upstreamHeaders(),
        ...(sent.length > 0 ? { body: sent } : {}),
      });
      let answer = await forwarded.text();
      if (op.operationId === 'get_collections') answer = answer.split(tag).join('');
      send(forwarded.status, answer);
    } catch (err) {
      // The server is down (a killed node): answer as a refused connection would, without a body.
      rec.status = 0;
      res.destroy(err instanceof Error ? err : undefined);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    mode: 'live',
    requests,
    violations,
    memory: new QdrantMemory(),
    async points(collection) {
      const out: QdrantStoredPoint[] = [];
      let offset: unknown = null;
      do {
        const page = await raw('POST', `/collections/${tag}${collection}/points/scroll`, {
          limit: 1000,
          with_payload: true,
          with_vector: true,
          ...(offset === null ? {} : { offset }),
        });
        if (page.status === 404) return out;
        const r = page.json.result as { points: QdrantStoredPoint[]; next_page_offset: unknown };
        out.push(...r.points);
        offset = r.next_page_offset ?? null;
      } while (offset !== null);
      return out;
    },
    async info(collection) {
      return (await raw('GET', `/collections/${tag}${collection}`)).json.result as Record<string, unknown>;
    },
    setDelay(ms) {
      delay = ms;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const name of created) await raw('DELETE', `/collections/${name}`).catch(() => undefined);
    },
  };
}
