import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { KildeError } from '../errors.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { BODY_LIMITS } from '../http/body-limits.js';
import { makeErrorHandler } from '../http/errors.js';
import {
  isLibreChatCollection,
  type LibreChatSettings,
  libreChatAuth,
  ownerCollection,
  ownerOf,
} from '../http/librechat-auth.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { identifierProblem, identifierRefinement } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import type { BuiltPipeline } from './build.js';
import { clientGone } from './client-gone.js';
import type { IngestMetrics } from './metrics.js';
import { type ReceivedForm, receiveMultipart } from './multipart.js';
import { type IngestTarget, invalid } from './request.js';
import { timed } from './stages.js';
import { withTempDir } from './temp-dir.js';

/**
 * The writing half of LibreChat's RAG API (`danny-avila/rag_api`, docs/librechat.md), over the
 * same ingestion service as `PUT /api/v1/ingest`:
 *
 * - `POST /embed`, multipart as LibreChat's `uploadVectors` sends it: `file_id`, `file`, then
 *   `entity_id` (an agent's files) and `storage_metadata` when it has them. Answered
 *   `{status, message, file_id, filename, known_type}`: LibreChat records `embedded:
 *   Boolean(known_type)`, and with `known_type: false` tells the user the type is not supported.
 * - `POST /text`: the same form, extracted only, answered `{text, file_id, filename, known_type}`.
 * - `DELETE /documents` with a JSON array of file ids.
 */

/** The `collection_type` of LibreChat's files (`meta.collection_type`). */
export const LIBRECHAT_COLLECTION_TYPE = 'librechat';

/** Form fields LibreChat sends besides the file. */
const FORM_FIELDS = new Set(['file_id', 'entity_id', 'storage_metadata']);

export interface LibreChatWriteDeps {
  pipeline: () => BuiltPipeline;
  metrics: IngestMetrics;
  maxBytes: number;
  settings: LibreChatSettings;
}

const fileIdsBody = z
  .array(z.string().min(1).max(512).superRefine(identifierRefinement('file id')))
  .max(1000);
const detail = z.object({ detail: z.string(), code: z.string() });

/** The form's file_id and the collection its owner's files go to. */
function formTarget(request: FastifyRequest, form: ReceivedForm, prefix: string): IngestTarget {
  const fileId = form.fields.file_id?.trim();
  if (!fileId) throw invalid('Invalid request: file_id is required', 'invalidFields');
  const problem = identifierProblem(fileId);
  if (problem) throw invalid(`Invalid request: file_id ${problem}`);
  const filename = form.file.filename.trim();
  if (filename === '') throw invalid('Invalid request: the file part has no file name');
  const owner = ownerOf(request, form.fields.entity_id?.trim());
  return {
    fileId,
    filename,
    collectionName: ownerCollection(prefix, owner),
    collectionType: LIBRECHAT_COLLECTION_TYPE,
    // rag_api's `user_id`: the entity when one is given, else the user.
    userId: owner,
    overwrite: true,
    source: filename,
  };
}

/** An extraction failure that means "Kilde reads no such file": rag_api's `known_type: false`. */
function unknownType(err: unknown): err is KildeError {
  return (
    err instanceof KildeError &&
    err.code === 'EXTRACTION_FAILED' &&
    err.message.startsWith('Unsupported file type')
  );
}

/**
 * Where the file's chunks are: nowhere, only in LibreChat's collections, or also elsewhere. The
 * secret reaches LibreChat's collections only, so a file id another tenant uses is never deleted.
 */
async function whereIs(
  index: VectorIndex,
  fileId: string,
  prefix: string,
): Promise<'absent' | 'ours' | 'foreign'> {
  let cursor: string | undefined;
  let seen = false;
  do {
    const page = await index.scroll(
      { fileId, chunksOnly: true },
      { limit: 1000, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      if (!isLibreChatCollection(prefix, p.meta.collection_name)) return 'foreign';
      seen = true;
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return seen ? 'ours' : 'absent';
}

export function registerLibreChatWriteRoutes(
  app: KildeApp,
  ctx: PartContext,
  deps: LibreChatWriteDeps,
): void {
  const { settings } = deps;
  const auth = libreChatAuth(settings);
  // FastAPI's error body is `{detail}`: the kernel's `{detail, code}` is read the same way.
  app.setErrorHandler(makeErrorHandler(ctx.config.DEBUG));

  const receive = (request: FastifyRequest, dir: string) => {
    if (!request.isMultipart())
      throw invalid('This route takes a multipart body with a "file" part', 'unsupportedMediaType');
    return receiveMultipart(request, dir, { maxBytes: deps.maxBytes });
  };
  const logIgnored = (request: FastifyRequest, form: ReceivedForm) => {
    const ignored = [...Object.keys(form.fields).filter((f) => !FORM_FIELDS.has(f)), ...form.ignoredParts];
    if (ignored.length > 0) request.log.debug({ fields: ignored }, 'ignored unknown embed field(s)');
  };

  app.post('/embed', { onRequest: auth, bodyLimit: BODY_LIMITS.ingest }, async (request, reply) => {
    const signal = clientGone(reply);
    const { service } = deps.pipeline();
    return withTempDir(async (dir) => {
      const form = await receive(request, dir);
      logIgnored(request, form);
      const target = formTarget(request, form, settings.prefix);
      noteOnRequestLine(request, { file_id: target.fileId, collection: target.collectionName });
      try {
        const outcome = await service.ingest(
          target,
          async () => ({
            path: form.file.path,
            bytes: form.file.bytes,
            filename: target.filename,
            ...(form.file.mimeType ? { mimeType: form.file.mimeType } : {}),
          }),
          signal,
        );
        deps.metrics.document(outcome.bytes, outcome.chunksCount);
        return {
          status: true,
          message: 'File processed successfully.',
          file_id: target.fileId,
          filename: target.filename,
          known_type: true,
        };
      } catch (err) {
        if (!unknownType(err)) throw err;
        noteOnRequestLine(request, { reason: err.message });
        return {
          status: false,
          message: err.message,
          file_id: target.fileId,
          filename: target.filename,
          known_type: false,
        };
      }
    });
  });

  app.post('/text', { onRequest: auth, bodyLimit: BODY_LIMITS.ingest }, async (request) => {
    const pipeline = deps.pipeline();
    return withTempDir(async (dir) => {
      const form = await receive(request, dir);
      logIgnored(request, form);
      const target = formTarget(request, form, settings.prefix);
      const documents = await timed(
        deps.metrics,
        'convert',
        { code: 'EXTRACTION_FAILED', variant: 'crashed', message: 'Extraction failed' },
        () =>
          pipeline.extractor.extract({
            path: form.file.path,
            filename: target.filename,
            ...(form.file.mimeType ? { mimeType: form.file.mimeType } : {}),
          }),
      );
      return {
        text: documents.map((d) => d.text).join('\n'),
        file_id: target.fileId,
        filename: target.filename,
        known_type: true,
      };
    });
  });

  app.delete(
    '/documents',
    {
      onRequest: auth,
      bodyLimit: BODY_LIMITS.search,
      schema: { body: fileIdsBody, response: { 200: z.object({ message: z.string() }), 404: detail } },
    },
    async (request) => {
      const ids = [...new Set(request.body)];
      const { service, index } = deps.pipeline();
      const missing: string[] = [];
      for (const id of ids) {
        const where = await whereIs(index, id, settings.prefix).catch((err: unknown) => {
          throw new KildeError('DELETE_FAILED', 'Deleting from the vector index failed', { cause: err });
        });
        // Another tenant's file is answered as one that does not exist: nothing is said about it.
        if (where !== 'ours') {
          missing.push(id);
          continue;
        }
        await service.deleteFile(id);
        deps.metrics.deleted('success');
      }
      noteOnRequestLine(request, { files: ids.length, missing: missing.length });
      // rag_api deletes what exists, then answers 404 when any id was not found (LibreChat takes a
      // 404 as "already deleted").
      if (missing.length > 0) throw new KildeError('NOT_FOUND', 'One or more IDs not found');
      const n = request.body.length;
      return { message: `Documents for ${n} file${n > 1 ? 's' : ''} deleted successfully` };
    },
  );
}
