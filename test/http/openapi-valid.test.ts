import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allService, SERVICES, type Service } from '../../src/cli/services.js';
import { ERRORS } from '../../src/errors.js';
import { buildApp, type KildeApp } from '../../src/http/app.js';
import { openApiParts } from '../helpers/openapi-service.js';

/**
 * The OpenAPI document is a valid OpenAPI 3.1 document (issue #30): importers such as Open WebUI's
 * OpenAPI tool server, Dify's custom tools and client generators reject an invalid one. Checked with
 * a real validator (@apidevtools/swagger-parser: the 3.1 schema plus its semantic checks), for every
 * service; every operation has a unique `operationId` and a summary, error answers are documented
 * from the error table, and neither `/mcp` (JSON-RPC, not REST) nor wildcard routes appear.
 */
type Operation = {
  operationId?: string;
  summary?: string;
  security?: unknown;
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
};
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas?: Record<string, unknown> };
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-openapi-valid-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function documentOf(service: Service): Promise<{ app: KildeApp; doc: Doc }> {
  // Mounts LibreChat's routes too (only with their secret).
  const { kernel, log, parts } = await openApiParts(service, dir, {
    LIBRECHAT_JWT_SECRET: 'librechat-secret-0123456789abcdef0123456789',
  });
  const app = await buildApp(kernel, { logger: log, parts });
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  return { app, doc: res.json() as Doc };
}

const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method, op })),
  );

describe.each([...SERVICES, allService].map((s) => [s.name, s] as const))('%s', (_name, service) => {
  let app: KildeApp;
  let doc: Doc;
  beforeAll(async () => {
    ({ app, doc } = await documentOf(service));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // The validator dereferences in place: it gets a copy.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });

  it('names and summarises every operation, uniquely', () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(3);
    for (const { path, method, op } of ops) {
      expect(op.operationId, `${method} ${path}`).toMatch(/^[A-Za-z][A-Za-z0-9_]*$/);
      expect(op.summary, `${method} ${path}`).toBeTruthy();
    }
    const ids = ops.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('leaves out /mcp and wildcard routes', () => {
    for (const path of Object.keys(doc.paths)) {
      expect(path).not.toMatch(/\*|^\/mcp/);
      for (const method of Object.keys(doc.paths[path] ?? {}))
        expect(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']).toContain(method);
    }
  });

  it('documents error answers from the error table', () => {
    const error = JSON.stringify(doc.components.schemas?.Error);
    for (const code of Object.keys(ERRORS)) expect(error).toContain(code);
    for (const { path, method, op } of operations(doc)) {
      const statuses = Object.keys(op.responses);
      expect(
        statuses.some((s) => /^[45]/.test(s)),
        `${method} ${path}`,
      ).toBe(true);
      // Dify's route answers a wrong key 403 in Dify's envelope (docs/dify.md), every other one 401.
      if (Array.isArray(op.security) && op.security.length > 0)
        expect(statuses, `${method} ${path}`).toContain(path === '/retrieval' ? '403' : '401');
    }
  });
});

describe("the retrieve service's document as an OpenAPI tool server", () => {
  it('offers the search as an operation Open WebUI can import as a tool', async () => {
    const { app, doc } = await documentOf(SERVICES.find((s) => s.name === 'retrieve')!);
    try {
      const search = doc.paths['/search']?.post;
      expect(search?.operationId).toBe('search');
      expect(search?.summary).toBeTruthy();
      expect(search?.security).toEqual([{ bearer: [] }]);
      // What Open WebUI turns into the tool's parameters: the JSON body's properties.
      const body = (
        search as { requestBody?: { content: Record<string, { schema: { properties?: object } }> } }
      )?.requestBody?.content['application/json']?.schema;
      expect(Object.keys(body?.properties ?? {})).toEqual(
        expect.arrayContaining(['queries', 'collection_names', 'k']),
      );
      expect(search?.responses['200']?.content?.['application/json']).toBeDefined();
      expect(search?.responses['422']?.description).toMatch(/INVALID_REQUEST/);
      expect(doc.paths['/retrieval']?.post?.operationId).toBe('difyRetrieval');
    } finally {
      await app.close();
    }
  });
});
