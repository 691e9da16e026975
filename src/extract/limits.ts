import { type ExtractionLimits, LIMIT_DEFAULTS } from '../config/extraction-limits.js';
import { KildeError } from '../errors.js';
import type { PoolErrors } from '../pool/worker-pool.js';
import { extractionFailed } from './document.js';

export type { ExtractionLimits };

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

/**
 * What a caller of the extraction and ingestion pools gets when its worker had to go: the limit
 * named by its setting, or EXTRACTION_FAILED 500 for a worker that stopped for any other reason.
 */
export const EXTRACTION_POOL_ERRORS: PoolErrors = {
  overLimit: (what, limit) =>
    limitExceeded(what, limit === 'timeout' ? 'EXTRACTION_TIMEOUT' : 'EXTRACTION_MAX_HEAP_MB'),
  crashed: (cause) =>
    new KildeError('EXTRACTION_FAILED', 'The extraction worker stopped unexpectedly', {
      variant: 'crashed',
      cause,
    }),
};
