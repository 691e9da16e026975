import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { WorkerPool } from '../../pool/worker-pool.js';
import { extractionFailed } from '../document.js';
import type { SourceFile } from '../extractor.js';
import { detectFileType, type FileKind } from '../file-type.js';
import type { ExtractTasks } from '../pool-tasks.js';
import { OFFICE_KINDS, type OfficeRenderer } from './office-render.js';
import type { RenderedPdf } from './render-pdf.js';

export interface PageImages extends RenderedPdf {
  /** The MIME type of the file as received (not of the intermediate PDF). */
  mime: string;
  kind: FileKind;
}

/** Renders a file to page images: what the vision engines send to the model. */
export type PageRenderer = (file: SourceFile, signal?: AbortSignal) => Promise<PageImages>;

export interface PageRendererOptions {
  pool: WorkerPool<ExtractTasks>;
  /** Office → PDF; without one, office documents fail with a message saying what to configure. */
  office: OfficeRenderer;
  dpi: number;
  maxPages: number;
  log: Logger;
}

/** Zip packages among the office kinds: judged by `checkArchive` before a renderer opens them. */
const PACKAGES: ReadonlySet<FileKind> = new Set(['docx', 'pptx', 'xlsx', 'odt', 'odp', 'ods']);

/**
 * File → PNG pages: a PDF is rasterised as it is; an office document is first converted to PDF by
 * the office renderer (after its package passed the same zip checks as every reader's), in a
 * private temporary directory removed afterwards. Rasterising runs in the worker pool, page by
 * page, up to `maxPages`.
 */
export function createPageRenderer(o: PageRendererOptions): PageRenderer {
  return async (file, signal) => {
    const type = await detectFileType(file.path, file.filename, file.mimeType);
    if (type.kind === undefined) {
      throw extractionFailed(
        type.claimed
          ? `File content does not match its type: named or sent as ${type.claimed}, but it is not one (corrupt or mislabelled)`
          : `Unsupported file type: ${type.mime}`,
      );
    }
    const kind = type.kind;
    if (kind !== 'pdf' && !OFFICE_KINDS.has(kind)) {
      throw extractionFailed(
        `Unsupported file type for the vision engines: ${type.mime} (they render PDF and office documents: DOCX, PPTX, XLSX, ODT, ODP, ODS, RTF)`,
      );
    }
    let dir: string | undefined;
    try {
      let pdf = file.path;
      if (kind !== 'pdf') {
        if (PACKAGES.has(kind)) await o.pool.run({ kind: 'check-archive', path: file.path }, { signal });
        dir = await mkdtemp(join(tmpdir(), 'kilde-render-'));
        pdf = await o.office.toPdf(file, kind, dir, signal);
      }
      const rendered = await o.pool.run(
        { kind: 'render', path: pdf, dpi: o.dpi, maxPages: o.maxPages },
        { signal },
      );
      if (rendered.pages.length === 0) throw extractionFailed('The document has no pages to render');
      if (rendered.totalPages > rendered.pages.length) {
        o.log.warn(
          { file: file.filename, pages: rendered.totalPages, sent: rendered.pages.length },
          'document has more pages than VISION_LLM_MAX_PAGES: only the first are sent to the vision model',
        );
      }
      return { ...rendered, mime: type.mime, kind };
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  };
}
