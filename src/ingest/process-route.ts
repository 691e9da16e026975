import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { KildeError } from '../errors.js';
import type { ExtractedDocument } from '../extract/extractor.js';
import type { KildeApp, PartContext } from '../http/app.js';
import type { BuiltPipeline } from './build.js';
import { streamToFile, tooLarge } from './byte-limit.js';
import type { IngestMetrics } from './metrics.js';
import { checkFileName, invalid } from './request.js';
import { timed } from './stages.js';
import { sourcePath, withTempDir } from './temp-dir.js';

/**
 * Open WebUI's external document loader (`CONTENT_EXTRACTION_ENGINE=external`,
 * `EXTERNAL_DOCUMENT_LOADER_URL` = Kilde's ingest URL; Open WebUI 0.12,
 * `backend/open_webui/retrieval/loaders/external_document.py`): `PUT {url}/process` with the file's
 * raw bytes as the body, `Content-Type` the file's MIME type (absent when unknown), `X-Filename` its
 * stored name URL-encoded (`<uuid>_<name>`), `Authorization: Bearer <EXTERNAL_DOCUMENT_LOADER_API_KEY>`.
 * It reads a JSON object `{page_content, metadata}` or a list of them, and raises on any other status,
 * showing the body. The answer follows Open WebUI's own loaders: a PDF is one document per page with
 * `page` 0-based, `page_label` and `total_pages` as its pypdf loader gives them; anything else is
 * one document. Metadata values are scalars (Open WebUI stores them in its own vector database).
 */

export const processedDocument = z.object({
  page_content: z.string(),
  metadata: z.record(z.string(), z.union([z.string(), z.number()])),
});
export type ProcessedDocument = z.output<typeof processedDocument>;

export interface ProcessRouteDeps {
  pipeline: () => BuiltPipeline;
  metrics: IngestMetrics;
  maxBytes: number;
}

/** The text of a file Open WebUI gets back when Kilde read nothing from it. */
export const NO_TEXT = 'No extractable text';

export async function registerProcessRoute(app: KildeApp, ctx: PartContext, deps: ProcessRouteDeps) {
  // Any body is the file itself, whatever its Content-Type (a PDF, a DOCX, text/plain, even JSON):
  // the route's own plugin drops the app's body parsers and hands the unread stream on.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.put(
      '/process',
      {
        onRequest: ctx.auth,
        config: {
          docs: {
            summary:
              "Open WebUI's external document loader: the file's raw bytes in, `[{page_content, metadata}]` out (one per PDF page)",
            operationId: 'processDocument',
            responses: { 200: z.array(processedDocument) },
          },
        },
      },
      async (request) => {
        const declared = Number(request.headers['content-length']);
        if (Number.isFinite(declared) && declared > deps.maxBytes) throw tooLarge(deps.maxBytes);
        const filename = fileName(request);
        const mimeType = mediaType(request.headers['content-type']);
        const pipeline = deps.pipeline();
        return withTempDir(async (dir) => {
          const path = sourcePath(dir, filename);
          const body = request.body as NodeJS.ReadableStream | undefined;
          const bytes = await streamToFile(body ?? request.raw, path, deps.maxBytes);
          if (bytes === 0) throw invalid('Invalid request: the body is empty; send the file as the body');
          const documents = await timed(
            deps.metrics,
            'convert',
            { code: 'EXTRACTION_FAILED', variant: 'crashed', message: 'Extraction failed' },
            () => pipeline.extractor.extract({ path, filename, bytes, ...(mimeType ? { mimeType } : {}) }),
          );
          const answer = documents.flatMap((d) => toOpenWebUi(d, filename, pipeline.extractor.name));
          if (answer.length === 0) {
            // Open WebUI would store an empty file and embed nothing: say why instead.
            throw new KildeError('EXTRACTION_FAILED', `${NO_TEXT} in ${JSON.stringify(filename)}`);
          }
          return answer;
        });
      },
    );
  });
}

/** `X-Filename` is URL-encoded (Python's `quote`); a name that does not decode is taken as sent. */
function fileName(request: FastifyRequest): string {
  const raw = request.headers['x-filename'];
  const given = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!given) return 'upload';
  let name = given;
  try {
    name = decodeURIComponent(given);
  } catch {
    // Kept as sent.
  }
  // Decoded, it may hold what a header cannot (%00, %1B): refused like any file name (400).
  checkFileName(name, 'X-Filename');
  // A name, never a path (Open WebUI sends a basename; another client might not).
  return name.split(/[\\/]/).pop()?.trim() || 'upload';
}

function mediaType(header: string | undefined): string | undefined {
  const type = header?.split(';')[0]?.trim().toLowerCase();
  return !type || type === 'application/octet-stream' ? undefined : type;
}

/** One extracted document as Open WebUI's loaders give it: a PDF page by page, else whole. */
export function toOpenWebUi(doc: ExtractedDocument, filename: string, engine: string): ProcessedDocument[] {
  const m = doc.metadata;
  const common: Record<string, string | number> = { source: filename };
  if (m.title) common.title = m.title;
  if (m.authors?.length) common.author = m.authors.join(', ');
  if (m.created_at) common.creationdate = m.created_at;
  if (m.languages[0]) common.language = m.languages[0];
  common.mime_type = m.mime_type;
  common.extraction_engine = doc.extractor ?? engine;
  if (doc.vision_profile) common.vision_profile = doc.vision_profile;
  const pages = doc.pages ?? [];
  const paged = m.mime_type === 'application/pdf' && pages.length > 0;
  if (!paged) {
    const text = doc.text.trim();
    return text === '' ? [] : [{ page_content: text, metadata: common }];
  }
  const total =
    typeof m.page_count === 'number' ? m.page_count : pages.reduce((most, p) => Math.max(most, p.page), 0);
  const perPage = pages.map((p) => ({
    page_content: doc.text.slice(p.start, p.end).trim(),
    // pypdf's loader: `page` is the 0-based index, `page_label` the printed number.
    metadata: { ...common, total_pages: total, page: p.page - 1, page_label: String(p.page) },
  }));
  // As pypdf's loader, an empty page is still a page, unless the whole file has no text.
  return perPage.some((p) => p.page_content !== '') ? perPage : [];
}
