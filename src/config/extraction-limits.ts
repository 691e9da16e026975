/*
 * The per-document limits and their defaults, apart from the zod schemas of extraction.ts: the
 * worker processes check the limits and would otherwise load zod (~0.1 s of CPU each) for them.
 */

/**
 * Per-document bounds of the in-process engines (`src/extract/limits.ts` checks them). Each is
 * checked as early as the format allows: page count before any page is read, the zip central
 * directory before anything is inflated, nesting while parsing.
 */
export interface ExtractionLimits {
  /** Pages of a PDF (`EXTRACTION_MAX_PAGES`). */
  maxPages: number;
  /** Uncompressed bytes of all entries of an OOXML/ODF/EPUB package (`EXTRACTION_MAX_ARCHIVE_BYTES`). */
  maxArchiveBytes: number;
  /** Entries of such a package (`EXTRACTION_MAX_ARCHIVE_ENTRIES`). */
  maxArchiveEntries: number;
  /** Uncompressed-to-compressed ratio of one entry larger than 1 MiB, and of the whole package (`EXTRACTION_MAX_COMPRESSION_RATIO`). */
  maxCompressionRatio: number;
  /** Characters of extracted text (`EXTRACTION_MAX_TEXT_CHARS`). */
  maxTextChars: number;
  /** Open elements of an HTML or XML document (`EXTRACTION_MAX_NESTING`). */
  maxNesting: number;
  /**
   * MiB of memory one document may take (`EXTRACTION_MAX_HEAP_MB`): the worker's V8 heap limit, and
   * the bound PDFium's WebAssembly memory, which that heap limit does not cover, is checked against.
   */
  maxHeapMb: number;
}

/** Defaults of the per-document limits (also used where no configuration is read: tests, benches). */
export const LIMIT_DEFAULTS: ExtractionLimits = {
  maxPages: 5_000,
  maxArchiveBytes: 256 * 1024 * 1024,
  maxArchiveEntries: 20_000,
  maxCompressionRatio: 100,
  maxTextChars: 20_000_000,
  maxNesting: 512,
  maxHeapMb: 1024,
};
