import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Logger, pino } from 'pino';
import type { ExtractorServiceConfig } from '../config/extraction.js';
import { KildeError } from '../errors.js';
import type { KildeApp, ServicePart } from '../http/app.js';
import { ownPool } from './create-extractor.js';
import type { ExtractedDocument, Extractor, SourceFile } from './extractor.js';
import { toIso6393 } from './languages.js';
import { findMarkdownTables } from './markdown-table.js';
import { createPooledExtractor, PDF_SPLIT } from './pooled-engine.js';

/** A Kreuzberg error body: `{error_type, message, traceback, status_code}`. */
function kreuzbergError(status: number, errorType: string, message: string) {
  return { error_type: errorType, message, traceback: null, status_code: status };
}

/**
 * `kilde serve extractor`: the Kreuzberg HTTP API (`POST /extract`, multipart `files` + optional
 * `config`, JSON array of results) served by the `inprocess` engine, so `sidecar-http` can scale
 * extraction out to other machines without Docker. Bearer-protected like every Kilde route.
 */
export function createExtractorPart(
  config: ExtractorServiceConfig,
  deps: { log?: Logger; extractor?: Extractor } = {},
): ServicePart {
  const pool = deps.extractor ? undefined : ownPool(config, { log: deps.log ?? pino({ level: 'silent' }) });
  const extractor =
    deps.extractor ??
    createPooledExtractor(pool!, {
      name: 'inprocess',
      ownsPool: true,
      pdfSplit: config.EXTRACTION_PDF_SPLIT ? PDF_SPLIT : false,
    });
  return {
    name: 'extractor',
    afterListen: () => pool?.prewarm(),
    close: async () => extractor.close?.(),
    async register(app: KildeApp, ctx) {
      await app.register(multipart, {
        limits: { fileSize: config.EXTRACTOR_MAX_UPLOAD_BYTES, files: 32, fields: 8 },
      });
      app.setErrorHandler((error, request, reply) => sendError(error, request, reply));
      app.post('/extract', { onRequest: ctx.auth }, async (request) => {
        const dir = await mkdtemp(join(tmpdir(), 'kilde-extractor-'));
        try {
          const files = await receive(request, dir);
          if (files.length === 0) throw new KildeError('INVALID_REQUEST', 'No files provided for extraction');
          const results = [];
          for (const file of files) {
            for (const doc of await extractor.extract(file)) results.push(toKreuzberg(doc));
          }
          return results;
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });
    },
  };
}

/** Streams every `files` part to disk; `config` must be JSON (its options do not apply to this engine). */
async function receive(request: FastifyRequest, dir: string): Promise<SourceFile[]> {
  try {
    return await receiveParts(request, dir);
  } catch (err) {
    const e = err as { code?: unknown; syscall?: unknown; message?: unknown };
    // A body that is not the multipart it claims (wrong boundary, cut short) is the caller's; a
    // local file-system failure and the limits keep their own answers.
    if (err instanceof KildeError || e.syscall !== undefined || String(e.code).startsWith('FST_')) throw err;
    throw new KildeError('INVALID_REQUEST', `Malformed multipart body: ${String(e.message ?? err)}`);
  }
}

async function receiveParts(request: FastifyRequest, dir: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      if (part.fieldname !== 'files') {
        part.file.resume();
        continue;
      }
      const path = join(dir, String(files.length));
      await pipeline(part.file, createWriteStream(path));
      if (part.file.truncated)
        throw new KildeError('INVALID_REQUEST', 'File exceeds the upload limit', { variant: 'tooLarge' });
      const declared =
        part.mimetype && part.mimetype !== 'application/octet-stream' ? part.mimetype : undefined;
      files.push({
        path,
        filename: part.filename || 'document',
        ...(declared ? { mimeType: declared } : {}),
      });
    } else if (part.fieldname === 'config') {
      try {
        JSON.parse(String(part.value));
      } catch (err) {
        throw new KildeError(
          'INVALID_REQUEST',
          `Invalid extraction configuration: ${(err as Error).message}`,
        );
      }
    }
  }
  return files;
}

function toKreuzberg(doc: ExtractedDocument) {
  const { languages, mime_type, ...metadata } = doc.metadata;
  const pageOf = (offset: number) => doc.pages?.find((p) => offset >= p.start && offset <= p.end)?.page ?? 1;
  return {
    content: doc.text,
    mime_type,
    metadata: { ...metadata, ...(languages[0] ? { language: languages[0] } : {}) },
    tables: findMarkdownTables(doc.text).map((t) => ({
      cells: t.cells,
      markdown: t.markdown,
      page_number: pageOf(t.start),
    })),
    detected_languages: languages.map(toIso6393),
    ...(doc.pages
      ? { pages: doc.pages.map((p) => ({ page_number: p.page, content: doc.text.slice(p.start, p.end) })) }
      : {}),
  };
}

function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const fe = error as { code?: string; statusCode?: number; message?: string };
  let status = 500;
  let type = 'Error';
  let message = 'Internal server error';
  if (error instanceof KildeError) {
    status = error.statusCode;
    message = error.message;
    type =
      status === 400 || status === 413
        ? 'ValidationError'
        : message.startsWith('Unsupported file type')
          ? 'UnsupportedFormatError'
          : 'ParsingError';
  } else if (fe.code === 'FST_REQ_FILE_TOO_LARGE' || fe.code === 'FST_FILES_LIMIT') {
    status = 413;
    type = 'ValidationError';
    message = fe.message ?? 'Request too large';
  } else if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    status = fe.statusCode;
    type = 'ValidationError';
    message = fe.message ?? 'Bad request';
  }
  if (status >= 500) request.log.error({ err: error }, 'extraction failed');
  else request.log.info({ status, reason: message }, 'extraction rejected');
  return reply.status(status).send(kreuzbergError(status, type, message));
}
