import { LIMIT_DEFAULTS } from '../config/extraction.js';
import type { KildeError } from '../http/errors.js';
import { extractionFailed } from './document.js';

/**
 * Per-document bounds of the in-process engines. Each is checked as early as the format allows
 * (page count before any page is read, the zip central directory before anything is inflated,
 * nesting while parsing), so a hostile file costs little before it is refused.
 */
export interface ExtractionLimits {
  /** Pages of a PDF (`EXTRACTION_MAX_PAGES`). */
  maxPages: number;
  /** Uncompressed bytes of all entries of an OOXML/ODF/EPUB package (`EXTRACTION_MAX_ARCHIVE_BYTES`). */
  maxArchiveBytes: number;
  /** Entries of such a package (`EXTRACTION_MAX_ARCHIVE_ENTRIES`). */
  maxArchiveEntries: number;
  /** Uncompressed-to-compressed ratio of one entry larger than 1 MiB (`EXTRACTION_MAX_COMPRESSION_RATIO`). */
  maxCompressionRatio: number;
  /** Characters of extracted text (`EXTRACTION_MAX_TEXT_CHARS`). */
  maxTextChars: number;
  /** Open elements of an HTML or XML document (`EXTRACTION_MAX_NESTING`). */
  maxNesting: number;
}

/** The configured defaults, for callers (tests, benches) that do not read configuration. */
export const DEFAULT_LIMITS: ExtractionLimits = LIMIT_DEFAULTS;

/** A document over one of the limits: `EXTRACTION_FAILED` naming the limit and its variable. */
export function limitExceeded(what: string, variable: string): KildeError {
  return extractionFailed(`Document exceeds an extraction limit: ${what} (${variable})`);
}

export function checkTextSize(chars: number, limits: Pick<ExtractionLimits, 'maxTextChars'>): void {
  if (chars > limits.maxTextChars) {
    throw limitExceeded(
      `more than ${limits.maxTextChars.toLocaleString('en')} characters of text`,
      'EXTRACTION_MAX_TEXT_CHARS',
    );
  }
}

export function nestingExceeded(limits: Pick<ExtractionLimits, 'maxNesting'>): KildeError {
  return limitExceeded(`elements nested more than ${limits.maxNesting} deep`, 'EXTRACTION_MAX_NESTING');
}
