import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CONCRETE_ENGINES, VISION_PROFILES } from '../config/extraction.js';
import { KildeError } from '../errors.js';
import { isPublicProfile } from '../extract/vision/prompts.js';
import { allowedCollections, assertCollectionsAllowed } from '../http/access.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { type ErrorBodyFormat, makeErrorHandler, toErrorPayload } from '../http/errors.js';
import { documentErrorBody } from '../http/openapi.js';
import { inSpan } from '../telemetry/tracing.js';
import type { BuiltPipeline } from './build.js';
import { tooLarge } from './byte-limit.js';
import { clientGone } from './client-gone.js';
import { identifyUpload } from './file-identity.js';
import { registerKnowledgeRoutes } from './knowledge-routes.js';
import type { IngestMetrics } from './metrics.js';
import { receiveMultipart } from './multipart.js';
import type { ObjectStore } from './object-store.js';
import { registerProcessRoute } from './process-route.js';
import {
  checkCollection,
  FORM_FIELDS,
  invalid,
  JSON_FIELDS,
  parseFormIngest,
  parseJsonIngest,
  unknownFields,
} from './request.js';
import { chunksDocs, deleteDocs, extractDocs, ingestDocs } from './route-docs.js';
import type { IngestOutcome } from './service.js';
import { timed } from './stages.js';
import { successBody } from './success-body.js';
import { sourcePath, withLazyTempDir, withTempDir } from './temp-dir.js';

export interface RouteDeps {
  /** The warm pipeline; throws 503 while start-up has not finished. */
  pipeline: () => BuiltPipeline;
  objectStore: ObjectStore;
  metrics: IngestMetrics;
  maxBytes: number;
  inspection: boolean;
  debug: boolean;
}

/** Ingestion failures answer `{status: false, error, code}`, the reference ingestion service's failure body. */
export const ingestErrorBody: ErrorBodyFormat = (p) => ({
  status: false,
  error: p.message,
  code: p.code,
  ...(p.debug === undefined ? {} : { debug: p.debug }),
});

const chunksQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.string().min(1).optional(),
  include_content: z.enum(['false', 'preview', 'full']).default('false'),
});
const PREVIEW_CHARS = 200;
/** Uploads up to this size are kept in memory, as the worker reads a small file whole (inprocess-engine.ts). */
const IN_MEMORY_BYTES = 64 * 1024;

/** Thin routes: parse and gate the request, then hand over to the IngestService. */
export async function registerIngestRoutes(app: KildeApp, ctx: PartContext, deps: RouteDeps) {
  const errorCodes = new WeakMap<FastifyRequest, string>();
  const handle = makeErrorHandler(deps.debug, ingestErrorBody);
  app.setErrorHandler((error, request, reply) => {
    errorCodes.set(request, toErrorPayload(error, deps.debug).code);
    return handle(error, request, reply);
  });
  // Every route of this scope answers errors in that body; the OpenAPI document says so.
  documentErrorBody(app, 'ingest');
  // Only JSON and multipart bodies: anything else (text/plain included) is a 415 before any work.
  app.removeContentTypeParser('text/plain');
  await app.register(multipart, { limits: { fileSize: deps.maxBytes } });

  const countIngest = async (request: FastifyRequest, reply: FastifyReply) => {
    const ok = reply.statusCode < 400;
    const code = ok
      ? 'OK'
      : (errorCodes.get(request) ?? (reply.statusCode === 401 ? 'UNAUTHORIZED' : 'INVALID_REQUEST'));
    deps.metrics.ingest(ok ? 'success' : 'failure', code, reply.elapsedTime / 1000);
  };

  app.put(
    '/api/v1/ingest',
    {
      onRequest: ctx.scopedAuth,
      onResponse: countIngest,
      bodyLimit: BODY_LIMITS.ingest,
      config: { jsonShape: JSON_SHAPES.ingest, docs: ingestDocs },
    },
    async (request, reply) => {
      const signal = clientGone(reply);
      const outcome = request.isMultipart()
        ? await ingestUpload(request, signal)
        : await ingestObject(request, signal);
      deps.metrics.document(outcome.bytes, outcome.chunksCount);
      return successBody(outcome);
    },
  );

  /** Unknown fields are ignored so a newer chat platform's additions never fail an upload. */
  const logIgnored = (request: FastifyRequest, fields: string[]) => {
    if (fields.length > 0) request.log.debug({ fields }, 'ignored unknown ingest field(s)');
  };

  async function ingestObject(request: FastifyRequest, signal: AbortSignal): Promise<IngestOutcome> {
    const body = request.body;
    const req = parseJsonIngest(body);
    logIgnored(request, unknownFields(body, JSON_FIELDS));
    deps.objectStore.check(req.bucket, req.key);
    checkCollection(req);
    assertCollectionsAllowed(request, [req.collectionName]);
    const { service } = deps.pipeline();
    const head = await deps.objectStore.head(req.bucket, req.key);
    if (head.bytes > deps.maxBytes) throw tooLarge(deps.maxBytes);
    return withTempDir((dir) =>
      service.ingest(
        req,
        () =>
          timed(
            deps.metrics,
            'fetch',
            { code: 'OBJECT_FETCH_FAILED', message: 'Fetching the object failed' },
            async () => {
              const path = sourcePath(dir, req.filename);
              const bytes = await deps.objectStore.download(req.bucket, req.key, path, deps.maxBytes);
              return {
                path,
                bytes,
                filename: req.filename,
                ...(head.contentType && head.contentType !== 'application/octet-stream'
                  ? { mimeType: head.contentType }
                  : {}),
              };
            },
          ),
        signal,
      ),
    );
  }

  async function ingestUpload(request: FastifyRequest, signal: AbortSignal): Promise<IngestOutcome> {
    const { service, extractor } = deps.pipeline();
    return withLazyTempDir(async (dir) => {
      // The upload read to a temporary file, a span of its own (src/telemetry/); a small one stays in
      // memory when the engine reads it so (the worker pool's): no folder, no file, no second read.
      const form = await inSpan('kilde.ingest.receive', {}, () =>
        receiveMultipart(request, dir, {
          maxBytes: deps.maxBytes,
          ...(extractor.acceptsData ? { memoryBytes: IN_MEMORY_BYTES } : {}),
          // Fields sent before the file are judged before a byte of it is stored.
          early: (fields) => {
            if ('file_id' in fields && 'collection_name' in fields && 'user_id' in fields) {
              const early = parseFormIngest(fields, 'upload');
              checkCollection(early);
              // A per-tenant key writes only into its collections: refused before the file is stored.
              assertCollectionsAllowed(request, [early.collectionName]);
            }
          },
        }),
      );
      const target = await identifyUpload(
        deps.pipeline().index,
        parseFormIngest(form.fields, form.file.filename),
        form.fields,
      );
      assertCollectionsAllowed(request, [target.collectionName]);
      logIgnored(request, [...unknownFields(form.fields, FORM_FIELDS), ...form.ignoredParts]);
      return service.ingest(
        target,
        async () => ({
          path: form.file.path,
          bytes: form.file.bytes,
          filename: target.filename,
          ...(form.file.mimeType ? { mimeType: form.file.mimeType } : {}),
          ...(form.file.data ? { data: form.file.data } : {}),
        }),
        signal,
      );
    });
  }

  app.post('/api/v1/extract', { onRequest: ctx.auth, config: { docs: extractDocs } }, async (request) => {
    if (!request.isMultipart())
      throw invalid('POST /api/v1/extract takes a multipart body with a "file" part', 'unsupportedMediaType');
    const pipeline = deps.pipeline();
    return withTempDir(async (dir) => {
      const query = request.query as Record<string, unknown>;
      const form = await receiveMultipart(request, dir, { maxBytes: deps.maxBytes });
      const unknown = Object.keys(form.fields).filter((k) => k !== 'engine' && k !== 'profile');
      if (unknown.length > 0) throw invalid(`Invalid request: unknown field(s) ${unknown.join(', ')}`);
      const engine = text(form.fields.engine ?? query.engine) ?? pipeline.extractor.name;
      const profile = text(form.fields.profile ?? query.profile);
      if (engine === 'auto') throw invalid('engine must be a concrete engine; auto is a routing mode');
      if (!(CONCRETE_ENGINES as readonly string[]).includes(engine)) {
        throw invalid(
          `Unknown or unavailable engine "${engine}"; choose one of ${CONCRETE_ENGINES.join(', ')}`,
        );
      }
      let extractor: ReturnType<BuiltPipeline['extractorFor']>;
      try {
        extractor = pipeline.extractorFor(engine);
      } catch (err) {
        throw invalid(`Engine ${engine} is not usable: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (profile !== undefined && !extractor.acceptsProfile) {
        throw invalid(`profile is accepted only by vision engines, not by ${engine}`);
      }
      if (profile !== undefined && !isPublicProfile(profile)) {
        throw invalid(`Unknown profile "${profile}"; choose one of ${VISION_PROFILES.join(', ')}`);
      }
      const documents = await timed(
        deps.metrics,
        'convert',
        { code: 'EXTRACTION_FAILED', variant: 'crashed', message: 'Extraction failed' },
        () =>
          extractor.extract(
            {
              path: form.file.path,
              filename: form.file.filename || 'upload',
              ...(form.file.mimeType ? { mimeType: form.file.mimeType } : {}),
            },
            profile === undefined ? {} : { profile },
          ),
      );
      // The profile actually used: a vision engine's default, or the one hybrid-diagram picked.
      const used = documents.find((d) => d.vision_profile)?.vision_profile ?? profile ?? null;
      return { status: true, engine, profile: used, documents };
    });
  });

  // Open WebUI's external document loader: the same extraction, in Open WebUI's shape.
  await registerProcessRoute(app, ctx, deps);

  app.delete<{ Params: { file_id: string } }>(
    '/api/v1/documents/:file_id',
    { onRequest: ctx.auth, config: { docs: deleteDocs } },
    async (request) => {
      const fileId = fileIdParam(request.params.file_id);
      try {
        const deleted = await deps.pipeline().service.deleteFile(fileId);
        deps.metrics.deleted('success');
        return { status: true, file_id: fileId, chunks_deleted: deleted };
      } catch (err) {
        deps.metrics.deleted('failure');
        throw err;
      }
    },
  );

  app.get<{ Params: { file_id: string } }>(
    '/api/v1/documents/:file_id/chunks',
    { onRequest: ctx.auth, config: { docs: chunksDocs } },
    async (request) => {
      if (!deps.inspection) {
        throw new KildeError('NOT_FOUND', 'Chunk inspection is disabled (ENABLE_INSPECTION_API=false)');
      }
      const fileId = fileIdParam(request.params.file_id);
      const parsed = chunksQuery.safeParse(request.query);
      if (!parsed.success) {
        throw invalid(
          `Invalid query: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        );
      }
      const q = parsed.data;
      const page = await deps.pipeline().service.chunks(fileId, q.limit, q.offset);
      const first = page.points[0]?.meta;
      return {
        status: true,
        file_id: fileId,
        returned: page.points.length,
        limit: q.limit,
        ...(page.next === undefined ? {} : { next_offset: page.next }),
        stats: {
          total_chunks: page.total,
          extraction_engine: first ? String(first.extraction_engine ?? first.extractor ?? '') || null : null,
          languages: first?.languages ?? [],
          name: first?.name ?? null,
          collection_name: first?.collection_name ?? null,
        },
        chunks: page.points.map((p) => ({
          split_id: p.meta.split_id,
          content_length: p.content.length,
          ...(q.include_content === 'full'
            ? { content: p.content }
            : q.include_content === 'preview'
              ? { content: p.content.slice(0, PREVIEW_CHARS) }
              : {}),
          meta: p.meta,
        })),
      };
    },
  );

  registerKnowledgeRoutes(app, ctx, {
    service: () => deps.pipeline().service,
    // A per-tenant key lists, reads and restores only its own collections.
    allowedCollections: (request) => {
      const allowed = allowedCollections(request);
      return allowed && new Set(allowed);
    },
  });
}

/**
 * The path's file_id, as given (control characters included): deleting and inspecting write
 * nothing, and rows an older version stored under such ids must stay removable.
 */
function fileIdParam(raw: string): string {
  const id = raw.trim();
  if (id === '') throw invalid('file_id must not be blank');
  return id;
}

function text(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}
