import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allService, SERVICES, type Service } from '../../src/cli/services.js';
import { buildApp, type KildeApp } from '../../src/http/app.js';
import { openApiParts } from '../helpers/openapi-service.js';

/**
 * The OpenAPI document (issue #15 item 7): every route each service registers, whoever adds it and
 * whenever, appears in `/openapi.json` with its method (collected with Fastify's onRoute hook as the
 * app is built), bearer-protected routes carry the security scheme, the zod schemas are in it, and
 * the document and `/docs` are served without the key.
 */
interface Collected {
  method: string;
  url: string;
  hidden: boolean;
}

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown; parameters?: { name: string; in: string }[] }>>;
  components: { securitySchemes: Record<string, unknown> };
}

/** Fastify's `/a/:b` as OpenAPI's `/a/{b}`. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-openapi-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function build(service: Service) {
  const { kernel, log, parts } = await openApiParts(service, dir);
  const routes: Collected[] = [];
  const onRoute = (r: RouteOptions) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const hidden = (r.schema as { hide?: boolean } | undefined)?.hide === true;
    for (const method of methods) routes.push({ method: String(method), url: r.url, hidden });
  };
  const app: KildeApp = await buildApp(kernel, { logger: log, parts, onRoute });
  await app.ready();
  return { app, routes };
}

describe.each([...SERVICES, allService].map((s) => [s.name, s] as const))('%s', (_name, service) => {
  let app: KildeApp;
  let routes: Collected[];
  let doc: OpenApiDoc;
  beforeAll(async () => {
    ({ app, routes } = await build(service));
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json() as OpenApiDoc;
  });
  afterAll(async () => {
    await app?.close();
  });

  it('describes every registered route, without the key', () => {
    expect(doc.openapi).toMatch(/^3\./);
    // `/mcp` (JSON-RPC, not REST), wildcard routes and methods OpenAPI has no name for (Fastify's
    // `all` adds QUERY, PROPFIND…) are left out (test/http/openapi-valid.test.ts).
    const openApiMethods = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'];
    const described = routes.filter(
      (r) =>
        openApiMethods.includes(r.method) && !r.hidden && !r.url.includes('*') && !/^\/mcp(\/|$)/.test(r.url),
    );
    // The kernel's routes at least, and the service's own.
    expect(described.map((r) => r.url)).toEqual(
      expect.arrayContaining(['/health', '/metrics', '/openapi.json']),
    );
    const missing = described.filter(
      (r) => doc.paths[openApiPath(r.url)]?.[r.method.toLowerCase()] === undefined,
    );
    expect(missing).toEqual([]);
    // Only static files are hidden: Swagger UI's and the web console's (docs/console.md).
    for (const r of routes.filter((x) => x.hidden))
      expect(r.url).toMatch(/^\/(docs|assets\/|index\.html$|$)/);
  });

  it('marks the bearer-protected routes, and only those', () => {
    expect(doc.components.securitySchemes).toHaveProperty('bearer');
    expect(doc.paths['/metrics']?.get?.security).toEqual([{ bearer: [] }]);
    // Said outright: no credentials.
    expect(doc.paths['/health']?.get?.security).toEqual([]);
  });

  it('serves the rendered docs offline, without the key', async () => {
    const page = await app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger-ui');
    const asset = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.body.length).toBeGreaterThan(100_000);
  });
});

describe('the knowledge routes in the document', () => {
  it('carry their zod schemas: parameters, query and responses', async () => {
    const ingest = SERVICES.find((s) => s.name === 'ingest')!;
    const { app } = await build(ingest);
    try {
      const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as OpenApiDoc & {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      const documents = doc.paths['/api/v1/collections/{name}/documents']?.get;
      expect(documents?.parameters?.map((p) => `${p.in}:${p.name}`).sort()).toEqual([
        'path:name',
        'query:cursor',
        'query:limit',
      ]);
      expect(documents?.security).toEqual([{ bearer: [] }]);
      expect(JSON.stringify(documents?.responses['200'])).toContain('next_cursor');
      const restore = doc.paths['/api/v1/documents/{file_id}/versions/{version}/restore']?.post;
      expect(JSON.stringify(restore)).toContain('chunks_count');
      expect(JSON.stringify(doc.paths['/api/v1/documents/{file_id}/versions']?.get)).toContain(
        'content_hash',
      );
    } finally {
      await app.close();
    }
  });
});

describe('routes that parse their own bodies', () => {
  type Schema = { properties?: Record<string, { format?: string }>; required?: string[] };
  type Op = {
    summary?: string;
    requestBody?: { content: Record<string, { schema: Schema }> };
    responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  };
  let doc: { paths: Record<string, Record<string, Op>> };
  let app: KildeApp;
  beforeAll(async () => {
    ({ app } = await build(SERVICES.find((s) => s.name === 'ingest')!));
    doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  afterAll(async () => {
    await app?.close();
  });

  it.each([
    ['/api/v1/ingest', 'put', '200'],
    ['/api/v1/jobs', 'post', '202'],
  ])('%s %s documents both bodies and its answer', (path, method, status) => {
    const op = doc.paths[path]?.[method];
    const json = op?.requestBody?.content['application/json']?.schema;
    expect(Object.keys(json?.properties ?? {})).toEqual(
      expect.arrayContaining([
        's3_bucket',
        's3_key',
        'bucket',
        'key',
        'file_id',
        'collection_name',
        'user_id',
      ]),
    );
    expect(json?.required).toEqual(expect.arrayContaining(['file_id', 'collection_name', 'user_id']));
    const form = op?.requestBody?.content['multipart/form-data']?.schema;
    expect(form?.properties?.file?.format).toBe('binary');
    expect(form?.required).toEqual(expect.arrayContaining(['file', 'collection_name', 'user_id']));
    // No file_id: derived from the collection and `path` (docs/api.md, "One identity for a file").
    expect(Object.keys(form?.properties ?? {})).toEqual(expect.arrayContaining(['file_id', 'path']));
    expect(form?.required).not.toContain('file_id');
    const answer = op?.responses[status]?.content?.['application/json']?.schema;
    expect(Object.keys(answer?.properties ?? {})).toEqual(
      expect.arrayContaining(method === 'put' ? ['chunks_count', 'extraction'] : ['job_id', 'state']),
    );
  });

  it('extract, delete and chunk inspection document their answers', () => {
    const extract = doc.paths['/api/v1/extract']?.post;
    expect(extract?.requestBody?.content['multipart/form-data']?.schema.properties).toHaveProperty('engine');
    expect(
      Object.keys(extract?.responses['200']?.content?.['application/json']?.schema.properties ?? {}),
    ).toEqual(['status', 'engine', 'profile', 'documents']);
    const del = doc.paths['/api/v1/documents/{file_id}']?.delete;
    expect(del?.responses['200']?.content?.['application/json']?.schema.required).toEqual([
      'status',
      'file_id',
      'chunks_deleted',
    ]);
    const chunks = doc.paths['/api/v1/documents/{file_id}/chunks']?.get;
    expect(chunks?.responses['200']?.content?.['application/json']?.schema.properties).toHaveProperty(
      'stats',
    );
    expect(chunks?.summary).toContain('reading order');
  });
});
