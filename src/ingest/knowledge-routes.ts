import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { KildeError } from '../errors.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { collectionNameSchema } from '../index/identifiers.js';
import type { IngestService } from './service.js';

/**
 * The knowledge API of the ingest part (docs/api.md): collections, a collection's documents, a
 * file's versions and restoring one. Shapes are the agreed ones (snake_case); every route is
 * declared with zod schemas, so the OpenAPI document describes it.
 */
export interface KnowledgeRouteDeps {
  service: () => IngestService;
  /**
   * The collections the request's key may read; undefined: all of them (the main `API_KEY`).
   * Per-tenant keys (`allowedCollections`, src/http/access.ts) supply the set; the routes admit them
   * (`ctx.scopedAuth`).
   */
  allowedCollections?: (request: FastifyRequest) => ReadonlySet<string> | undefined;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const fileIdParam = z
  .string()
  .min(1)
  .max(1024)
  .refine((s) => s.trim() !== '', 'file_id must not be blank');
const versionParam = z.string().min(1).max(128);

const collectionSchema = z.object({
  name: z.string(),
  files: z.number().int(),
  chunks: z.number().int(),
  last_ingest: z.string().nullable(),
});
const documentSchema = z.object({
  file_id: z.string(),
  name: z.string().nullable(),
  chunks: z.number().int(),
  live_version: z.string().nullable(),
  languages: z.array(z.string()),
  engine: z.string().nullable(),
  written_at: z.string().nullable(),
});
const versionSchema = z.object({
  version: z.string(),
  written_at: z.string().nullable(),
  chunks: z.number().int(),
  engine: z.string().nullable(),
  source: z.string().nullable(),
  content_hash: z.string(),
  live: z.boolean(),
});

export const DOCUMENT_PAGE = { default: 50, max: 200 } as const;

export function registerKnowledgeRoutes(app: KildeApp, ctx: PartContext, deps: KnowledgeRouteDeps) {
  const readable = (request: FastifyRequest, name: string) => {
    const allowed = deps.allowedCollections?.(request);
    // Another tenant's collection is answered like one that does not exist (for every name the
    // key may not read, whether it exists or not).
    if (allowed && !allowed.has(name)) {
      throw new KildeError('NOT_FOUND', `No collection ${name}`);
    }
  };

  app.get(
    '/api/v1/collections',
    {
      onRequest: ctx.scopedAuth,
      schema: {
        summary: 'Collections the key may read',
        tags: ['knowledge'],
        response: { 200: z.object({ collections: z.array(collectionSchema) }) },
      },
    },
    async (request) => {
      const list = await deps.service().collections(deps.allowedCollections?.(request));
      return {
        collections: list.map((c) => ({
          name: c.name,
          files: c.files,
          chunks: c.chunks,
          last_ingest: iso(c.lastIngest),
        })),
      };
    },
  );

  app.get(
    '/api/v1/collections/:name/documents',
    {
      onRequest: ctx.scopedAuth,
      schema: {
        summary: "One page of a collection's documents",
        tags: ['knowledge'],
        params: z.object({ name: collectionNameSchema }),
        querystring: z.strictObject({
          limit: z.coerce.number().int().min(1).max(DOCUMENT_PAGE.max).default(DOCUMENT_PAGE.default),
          cursor: z.string().min(1).max(1024).optional(),
        }),
        response: {
          200: z.object({ documents: z.array(documentSchema), next_cursor: z.string().nullable() }),
        },
      },
    },
    async (request) => {
      const { name } = request.params;
      readable(request, name);
      const page = await deps.service().documents(name, request.query.limit, request.query.cursor);
      return {
        documents: page.documents.map((d) => ({
          file_id: d.fileId,
          name: d.name,
          chunks: d.chunks,
          live_version: d.liveVersion,
          languages: d.languages,
          engine: d.engine,
          written_at: iso(d.writtenAt),
        })),
        next_cursor: page.next ?? null,
      };
    },
  );

  app.get(
    '/api/v1/documents/:file_id/versions',
    {
      onRequest: ctx.scopedAuth,
      schema: {
        summary: "A file's versions: the live one first, then the kept ones, newest first",
        tags: ['knowledge'],
        params: z.object({ file_id: fileIdParam }),
        querystring: z.strictObject({ collection_name: collectionNameSchema.optional() }),
        response: {
          200: z.object({
            file_id: z.string(),
            collection_name: z.string(),
            keep_versions: z.number().int(),
            versions: z.array(versionSchema),
          }),
        },
      },
    },
    async (request) => {
      const fileId = request.params.file_id.trim();
      const service = deps.service();
      // A per-tenant key sees only its collections: another tenant's file, or a collection it may
      // not read, answers byte for byte as a file that does not exist (the id aside).
      const out = await service.versions(
        fileId,
        request.query.collection_name,
        deps.allowedCollections?.(request),
      );
      return {
        file_id: fileId,
        collection_name: out.collectionName,
        keep_versions: service.keepVersions,
        versions: out.versions.map((v) => ({
          version: v.version,
          written_at: iso(v.writtenAt),
          chunks: v.chunks,
          engine: v.engine,
          source: v.source,
          content_hash: v.contentHash,
          live: v.live,
        })),
      };
    },
  );

  app.post(
    '/api/v1/documents/:file_id/versions/:version/restore',
    {
      onRequest: ctx.scopedAuth,
      schema: {
        summary: 'Make a kept version live again (atomically, under the file lock)',
        tags: ['knowledge'],
        params: z.object({ file_id: fileIdParam, version: versionParam }),
        body: z.strictObject({ collection_name: collectionNameSchema.optional() }).nullish(),
        response: {
          200: z.object({
            status: z.literal(true),
            file_id: z.string(),
            collection_name: z.string(),
            version: z.string(),
            chunks_count: z.number().int(),
          }),
        },
      },
    },
    async (request) => {
      const fileId = request.params.file_id.trim();
      const { version } = request.params;
      // As for versions: outside the key's collections, every file is missing.
      const out = await deps
        .service()
        .restore(fileId, version, request.body?.collection_name, deps.allowedCollections?.(request));
      return {
        status: true as const,
        file_id: fileId,
        collection_name: out.collectionName,
        version,
        chunks_count: out.chunksCount,
      };
    },
  );

  app.delete(
    '/api/v1/collections/:name/documents/:file_id',
    {
      onRequest: ctx.scopedAuth,
      schema: {
        summary:
          'Delete a document of a collection: every version of it, kept ones included (a per-tenant key: in its collections only)',
        tags: ['knowledge'],
        params: z.object({ name: collectionNameSchema, file_id: fileIdParam }),
        response: {
          200: z.object({
            status: z.literal(true),
            collection_name: z.string(),
            file_id: z.string(),
            chunks_deleted: z.number().int(),
          }),
        },
      },
    },
    async (request) => {
      const { name } = request.params;
      const fileId = request.params.file_id.trim();
      readable(request, name);
      const deleted = await deps.service().deleteDocument(fileId, name);
      return { status: true as const, collection_name: name, file_id: fileId, chunks_deleted: deleted };
    },
  );

  app.delete(
    '/api/v1/collections/:name',
    {
      onRequest: ctx.scopedAuth,
      schema: {
        summary:
          'Delete a collection: every document in it, each under its file lock (a per-tenant key: one of its collections only)',
        tags: ['knowledge'],
        params: z.object({ name: collectionNameSchema }),
        response: {
          200: z.object({
            status: z.literal(true),
            collection_name: z.string(),
            documents_deleted: z.number().int(),
            chunks_deleted: z.number().int(),
          }),
        },
      },
    },
    async (request) => {
      const { name } = request.params;
      readable(request, name);
      const out = await deps.service().deleteCollection(name);
      return {
        status: true as const,
        collection_name: name,
        documents_deleted: out.documents,
        chunks_deleted: out.chunks,
      };
    },
  );
}
