import { type ErrorVariant, KildeError } from '../errors.js';
import type { ExtractedDocument } from './extractor.js';
import type { ReadContent } from './inprocess/content.js';
import { detectLanguages, toIso6391 } from './languages.js';

/**
 * Completes a reader's output with the MIME type and languages (ISO 639-1): those an upstream
 * reported win, else detection from the text, else a language the document declares. `detected`:
 * the detection's answer when it already ran elsewhere (the worker pool, beside the reader).
 */
export function toDocument(
  content: ReadContent,
  mimeType: string,
  reported: readonly string[] = [],
  detected?: readonly string[],
): ExtractedDocument {
  const { declared_language, ...metadata } = content.metadata;
  let languages = iso1(reported);
  if (languages.length === 0) languages = detected ? [...detected] : detectLanguages(content.text);
  if (languages.length === 0 && typeof declared_language === 'string') languages = iso1([declared_language]);
  return {
    text: content.text,
    ...(content.pages && content.pages.length > 0 ? { pages: content.pages } : {}),
    metadata: { ...dropEmpty(metadata), languages, mime_type: mimeType },
  };
}

function iso1(codes: readonly string[]): string[] {
  return [...new Set(codes.map(toIso6391).filter((l): l is string => l !== undefined))];
}

function dropEmpty(m: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(m).filter(([, v]) => v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0)),
  );
}

/** EXTRACTION_FAILED: the file's own (422) unless `variant` names another case of the table. */
export function extractionFailed(
  message: string,
  variant?: ErrorVariant<'EXTRACTION_FAILED'>,
  cause?: unknown,
): KildeError {
  return new KildeError('EXTRACTION_FAILED', message, { variant, ...(cause === undefined ? {} : { cause }) });
}

/** A short, safe reason from a thrown value (no stack, one line, bounded). */
export function reasonOf(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}
