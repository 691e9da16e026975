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
  /** Set by vision / hybrid / auto-routed engines; copied to `meta.extractor` / `meta.vision_profile`. */
  extractor?: string;
  vision_profile?: string;
}

export interface SourceFile {
  /** Local path of the (temporary) file. */
  path: string;
  /** Original file name; its extension helps detect the type. */
  filename: string;
  /** MIME type if known (sniffed otherwise). */
  mimeType?: string;
}

export interface ExtractOptions {
  profile?: string;
  signal?: AbortSignal;
}

/** Every extraction engine implements this. Failures throw KildeError('EXTRACTION_FAILED', ...). */
export interface Extractor {
  /** Engine name as in EXTRACTION_ENGINE (`inprocess`, `sidecar-http`, ...). */
  readonly name: string;
  /** Whether the engine accepts a `profile` (vision engines only). */
  readonly acceptsProfile: boolean;
  extract(file: SourceFile, options?: ExtractOptions): Promise<ExtractedDocument[]>;
  probe?(signal: AbortSignal): Promise<void>;
  close?(): Promise<void>;
}
