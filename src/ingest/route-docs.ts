import { z } from 'zod';
import { multipartForm, type RouteDocs } from '../http/openapi.js';
import { ingestSuccessSchema, jobSchema } from './jobs/job.js';
import { ingestBodyDocs } from './request.js';

/*
 * What the OpenAPI document says of the ingest part's routes that parse their own bodies
 * (multipart, two shapes) or answer without a response schema (src/http/openapi.ts, RouteDocs).
 */

export const ingestDocs: RouteDocs = {
  summary: 'Ingest one file: an object-store reference (JSON) or an upload (multipart)',
  body: ingestBodyDocs,
  responses: { 200: ingestSuccessSchema },
};

export const jobDocs: RouteDocs = {
  summary: 'Queue the ingestion of one file (same body as PUT /api/v1/ingest)',
  body: ingestBodyDocs,
  responses: { 202: jobSchema },
};

const extractedDocument = z.looseObject({
  text: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  pages: z
    .array(z.looseObject({ page: z.number().int(), start: z.number().int(), end: z.number().int() }))
    .optional(),
  extractor: z.string().optional(),
  vision_profile: z.string().nullable().optional(),
  routing: z.object({ route: z.string(), signal: z.string() }).optional(),
});

export const extractDocs: RouteDocs = {
  summary: 'Extract one file without indexing it (a probe of the extraction engines)',
  body: {
    'multipart/form-data': multipartForm(
      z.object({
        engine: z
          .string()
          .optional()
          .meta({ description: 'A concrete engine (not auto); default: the configured one' }),
        profile: z.string().optional().meta({ description: 'A vision profile (vision engines only)' }),
      }),
    ),
  },
  responses: {
    200: z.object({
      status: z.literal(true),
      engine: z.string(),
      profile: z.string().nullable(),
      documents: z.array(extractedDocument),
    }),
  },
};

export const deleteDocs: RouteDocs = {
  summary: 'Delete every version of a file',
  responses: {
    200: z.object({ status: z.literal(true), file_id: z.string(), chunks_deleted: z.number().int() }),
  },
};

export const chunksDocs: RouteDocs = {
  summary: "A file's chunks in reading order (ENABLE_INSPECTION_API)",
  responses: {
    200: z.object({
      status: z.literal(true),
      file_id: z.string(),
      returned: z.number().int(),
      limit: z.number().int(),
      next_offset: z.string().optional(),
      stats: z.object({
        total_chunks: z.number().int(),
        extraction_engine: z.string().nullable(),
        languages: z.array(z.string()),
        name: z.string().nullable(),
        collection_name: z.string().nullable(),
      }),
      chunks: z.array(
        z.object({
          split_id: z.unknown(),
          content_length: z.number().int(),
          content: z.string().optional(),
          meta: z.record(z.string(), z.unknown()),
        }),
      ),
    }),
  },
};
