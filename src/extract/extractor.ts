/** A page of an extracted document: 1-based number and its character range in `text`. */
export interface PageSpan {
  page: number;
  start: number;
  end: number;
}

export interface DocumentMetadata {
  title?: string;
  subject?: string;
  authors?: string[];
  /** ISO 8601. */
  created_at?: string;
  /** ISO 639-1 codes, most likely first. */
  languages: string[];
  mime_type: string;
  page_count?: number;
  [extra: string]: unknown;
}

/** One extracted document: Markdown-ish text (tables rendered as Markdown), page spans, metadata. */
export interface ExtractedDocument {
  text: string;
  pages?: PageSpan[];
  metadata: DocumentMetadata;
  /**
   * Set by vision / hybrid / auto-routed engines; copied to `meta.extractor` / `meta.vision_profile`
   * (`null` when `auto` routed to an engine that uses no vision profile).
   */
  extractor?: string;
  vision_profile?: string | null;
  /** How `auto` routed the file (absent when no routing ran). */
  routing?: ExtractionRoute;
}

/**
 * The signal that decided a routing: `vector-flowchart` (signal one: many drawing shapes, more words
 * in text boxes than in the body), `raster-figure` (signal two: a large picture), `none` (a DOCX
 * neither fired for), `not-docx` (only DOCX files are examined).
 */
export type RouteSignal = 'vector-flowchart' | 'raster-figure' | 'none' | 'not-docx';

export interface ExtractionRoute {
  route: 'diagram' | 'default';
  signal: RouteSignal;
}

export interface SourceFile {
  /** Local path of the (temporary) file. */
  path: string;
  /** Original file name; its extension helps detect the type. */
  filename: string;
  /** MIME type if known (sniffed otherwise). */
  mimeType?: string;
  /** Its size in bytes, when the caller already knows it (spares a `stat` per file and stage). */
  bytes?: number;
  /**
   * The whole file, when a small upload was kept in memory (`path` is then empty): given only to an
   * extractor that `acceptsData`, which reads it without a file (a plain-text file) or writes it to
   * one first (any other kind).
   */
  data?: Uint8Array;
}

export interface ExtractOptions {
  /** A vision prompt profile (vision engines only). */
  profile?: string;
  signal?: AbortSignal;
  /** The file_id being ingested, for log lines (the routing decision). */
  fileId?: string;
}

/** Every extraction engine implements this. Failures throw KildeError('EXTRACTION_FAILED', ...). */
/** A document whose text comes in pieces (`Extractor.openText`). */
export interface StreamedText {
  /** The document as `extract` would return it, its `text` empty. */
  doc: ExtractedDocument;
  pieces(signal?: AbortSignal): AsyncGenerator<string>;
}

export interface Extractor {
  /** Engine name as in EXTRACTION_ENGINE (`inprocess`, `sidecar-http`, ...). */
  readonly name: string;
  /** Whether the engine accepts a `profile` (vision engines only). */
  readonly acceptsProfile: boolean;
  /** Whether the engine reads a `SourceFile` given as `data` (no file); only those are given one. */
  readonly acceptsData?: boolean;
  extract(file: SourceFile, options?: ExtractOptions): Promise<ExtractedDocument[]>;
  /**
   * Many files at once (a pipeline pass over small files), each exactly as `extract` would return
   * it or fail: one result per file, in order. Engines that can share the work (the worker pool's
   * round trips) implement it; the caller falls back to `extract` per file otherwise.
   */
  extractMany?(
    files: readonly SourceFile[],
    options?: { signal?: AbortSignal },
  ): Promise<Array<PromiseSettledResult<ExtractedDocument[]>>>;
  /**
   * A plain-text or Markdown file larger than `minBytes`, opened as a stream (memory bounded by a
   * read buffer, not the file): its document without its text, and the text piece by piece, exactly
   * as `extract` would return it. Undefined for any other file (the caller extracts it as usual).
   */
  openText?(
    file: SourceFile,
    options: { minBytes: number; signal?: AbortSignal },
  ): Promise<StreamedText | undefined>;
  probe?(signal: AbortSignal): Promise<void>;
  close?(): Promise<void>;
}
