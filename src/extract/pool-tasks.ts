import type { TaskResult } from '../pool/protocol.js';
import type { TaskContext, TaskHandlers } from '../pool/worker-runtime.js';
import { settle } from '../pool/worker-runtime.js';
import type { DocxLayout } from './docx-layout.js';
import type { SourceFile } from './extractor.js';
import type { FileKind } from './file-type.js';
import type { PdfPart, PdfReader } from './inprocess/pdf-parts.js';
import { joinPdf, type ReadDocument, readDocument, readPdfPart } from './inprocess-engine.js';
import { detectLanguages } from './languages.js';
import type { ExtractionLimits } from './limits.js';
import type { RenderedPdf } from './vision/render-pdf.js';

/*
 * Extraction's tasks in the worker pool (src/pool/): what each takes and answers, and how a worker
 * runs it. Callers import the types only; the handlers load in the workers (their entries:
 * src/extract/pool-worker.ts, src/ingest/pool-worker.ts).
 */

/** What a worker that extracts is set up with. */
export interface ExtractSetup {
  limits: ExtractionLimits;
  /** The PDF text reader (`EXTRACTION_PDF_READER`); PDFium when absent. */
  pdfReader?: PdfReader;
}

/** The document as read, and its languages as `detectLanguages` finds them. */
export type ExtractOutput = ReadDocument & { languages: string[] };

export type ExtractTasks = {
  extract: { input: { file: SourceFile; engine: string; only?: readonly FileKind[] }; output: ExtractOutput };
  /**
   * Many files read one after another in one task (a pipeline pass over small files): one IPC round
   * trip for all of them. Each file gets its own time limit (the worker says when each starts) and
   * its own result or error, in order.
   */
  'extract-many': {
    input: { files: SourceFile[]; engine: string; only?: readonly FileKind[] };
    output: Array<TaskResult<ExtractOutput>>;
  };
  /**
   * One part of a large PDF (`part` of `of`, pages split evenly; whole in part 0 below `minPages`
   * pages), read while another worker reads the next; `pdf-join` makes the document of the parts.
   */
  'pdf-part': { input: { file: SourceFile; part: number; of: number; minPages: number }; output: PdfPart };
  /** As `extract` reads the PDF whole. */
  'pdf-join': { input: { parts: PdfPart[]; mime: string }; output: ExtractOutput };
  /** A PDF's first pages as PNG (the vision engines). */
  render: { input: { path: string; dpi: number; maxPages: number }; output: RenderedPdf };
  /** A DOCX's diagram signals (the `auto` router), and with `text` its native Markdown (`hybrid-diagram`). */
  'docx-layout': { input: { path: string; text: boolean }; output: DocxLayout };
  /** A zip package judged by `checkArchive` (before an office renderer sees it). */
  'check-archive': { input: { path: string }; output: { checked: true } };
};

async function extract(
  input: ExtractTasks['extract']['input'],
  ctx: TaskContext<ExtractSetup>,
): Promise<ExtractOutput> {
  const setup = ctx.setup();
  const read = await readDocument(input.file, {
    name: input.engine,
    limits: setup.limits,
    ...(input.only ? { only: input.only } : {}),
    ...(setup.pdfReader ? { pdfReader: setup.pdfReader } : {}),
  });
  return { ...read, languages: detectLanguages(read.content.text) };
}

export const extractHandlers: TaskHandlers<ExtractTasks, ExtractSetup> = {
  extract,
  async 'extract-many'(input, ctx) {
    const out: ExtractTasks['extract-many']['output'] = [];
    for (const [k, file] of input.files.entries()) {
      if (k > 0) ctx.started(k);
      out.push(
        await settle(() =>
          extract({ file, engine: input.engine, ...(input.only ? { only: input.only } : {}) }, ctx),
        ),
      );
    }
    return out;
  },
  'pdf-part': (input, ctx) => readPdfPart(input.file, ctx.setup().limits, input, ctx.setup().pdfReader),
  async 'pdf-join'(input, ctx) {
    const read = await joinPdf(input.parts, input.mime, ctx.setup().limits);
    return { ...read, languages: detectLanguages(read.content.text) };
  },
  // Loaded on first use: a worker that never renders never loads pdf.js's canvas path or Skia.
  async render(input, ctx) {
    return (await import('./vision/render-pdf.js')).renderPdf(input.path, {
      dpi: input.dpi,
      maxPages: input.maxPages,
      limits: ctx.setup().limits,
    });
  },
  async 'check-archive'(input, ctx) {
    await (await import('./zip-guard.js')).checkArchive(input.path, ctx.setup().limits);
    return { checked: true };
  },
  async 'docx-layout'(input, ctx) {
    return (await import('./docx-layout.js')).readDocxLayout(input.path, ctx.setup().limits, {
      text: input.text,
    });
  },
};

/**
 * A worker started ahead of any task: PDFium, which reads the most common uploads. Not the language
 * detector's table: a plainly English document is decided by its stop words (languages.ts), so a
 * worker loads it on the first document that needs it. A failure here is the first PDF's to report
 * (it falls back to pdf.js), not the worker's end.
 */
export function preloadExtraction(setup: ExtractSetup | undefined): void {
  if (setup?.pdfReader !== 'pdfjs') {
    void import('./inprocess/pdfium.js').then((m) => m.loadPdfium()).catch(() => undefined);
  }
}
