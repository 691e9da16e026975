import type { Chunk } from '../chunk/chunker.js';
import type { ChunkerSettings } from '../chunk/create-chunker.js';
import type { ChunkInput } from '../chunk/segments.js';
import type { LexicalItem, PackedSparse } from '../embed/bm25/lexical-stage.js';
import type { ErrorCode } from '../errors.js';
import type { DocxLayout } from '../extract/docx-layout.js';
import type { SourceFile } from '../extract/extractor.js';
import type { FileKind } from '../extract/file-type.js';
import type { PdfPart, PdfReader } from '../extract/inprocess/pdf-parts.js';
import type { ReadDocument } from '../extract/inprocess-engine.js';
import type { ExtractionLimits } from '../extract/limits.js';
import type { RenderedPdf } from '../extract/vision/render-pdf.js';

/** What every worker of a pool is set up with (its first message). */
export interface WorkerSetup {
  limits: ExtractionLimits;
  /** Chunking, when the pool chunks: the settings and the counter (`approximate` or a tokenizer.json path). */
  chunking?: { settings: ChunkerSettings; counter: string };
  /** The PDF text reader (`EXTRACTION_PDF_READER`); PDFium when absent. */
  pdfReader?: PdfReader;
}

export type TaskInput =
  | { kind: 'extract'; file: SourceFile; engine: string; only?: readonly FileKind[] }
  /**
   * Many files read one after another in one task (a pipeline pass over small files): one IPC round
   * trip for all of them. Each file gets its own time limit (the worker says when each starts) and
   * its own result or error.
   */
  | { kind: 'extract-many'; files: SourceFile[]; engine: string; only?: readonly FileKind[] }
  /**
   * One part of a large PDF (`part` of `of`, pages split evenly; whole in part 0 below `minPages`
   * pages), read while another worker reads the next; `pdf-join` makes the document of the parts.
   */
  | { kind: 'pdf-part'; file: SourceFile; part: number; of: number; minPages: number }
  | { kind: 'pdf-join'; parts: PdfPart[]; mime: string }
  | { kind: 'chunk'; docs: ChunkInput[] }
  /** Chunks' lexical side (src/embed/bm25/lexical-stage.ts): terms, and BM25 vectors when `sparse`. */
  | { kind: 'lexical'; items: LexicalItem[]; sparse: boolean }
  /** A PDF's first pages as PNG (the vision engines). */
  | { kind: 'render'; path: string; dpi: number; maxPages: number }
  /** A DOCX's diagram signals (the `auto` router), and with `text` its native Markdown (`hybrid-diagram`). */
  | { kind: 'docx-layout'; path: string; text: boolean }
  /** A zip package judged by `checkArchive` (before an office renderer sees it). */
  | { kind: 'check-archive'; path: string };

/**
 * What the pool sends a worker process: its setup once, then one turn at a time: one task, or
 * several callers' queued small tasks merged (worker-pool.ts, `MERGE`), run one after another.
 */
export type ToWorker =
  | { type: 'setup'; setup: WorkerSetup }
  /** A worker started ahead of any task (`prewarm`): load what most documents need (PDFium) now. */
  | { type: 'preload' }
  | { type: 'tasks'; tasks: Array<{ id: number; input: TaskInput }> };

/**
 * What a worker answers, for each task of a turn: that the task has started (its time limit runs
 * from then, not from when it was queued), then its result. A task over many items (`extract-many`)
 * says when each item after the first starts: the time limit runs again from there, per item.
 */
export type FromWorker =
  | { type: 'started'; id: number; item?: number }
  | {
      type: 'result';
      id: number;
      result: TaskResult<TaskInput['kind']>;
      /** With a turn's last result: the worker's resident memory now and at its start, bytes. */
      memory?: { rss: number; startRss: number };
    };

export interface TaskOutputs {
  /** The document as read, and its languages as `detectLanguages` finds them. */
  extract: ReadDocument & { languages: string[] };
  /** One result per file, in order: the file as `extract` reads it, or its error. */
  'extract-many': Array<TaskResult<'extract'>>;
  'pdf-part': PdfPart;
  /** As `extract` reads the PDF whole. */
  'pdf-join': TaskOutputs['extract'];
  chunk: Chunk[][];
  lexical: { lexical: string[]; sparse?: PackedSparse };
  render: RenderedPdf;
  'docx-layout': DocxLayout;
  'check-archive': { checked: true };
}

/** KildeErrors do not survive the process boundary as such; they travel as data. */
export type TaskResult<K extends TaskInput['kind']> =
  | { ok: true; value: TaskOutputs[K] }
  | { ok: false; error: { code: ErrorCode; status: number; message: string } };
