import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const pdfjsDir = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));

/**
 * pdf.js document options shared by text extraction (unpdf) and page rendering (vision): pdf.js
 * needs the Adobe CMaps to decode CJK fonts with predefined encodings, without them those pages come
 * out empty or garbled; they and the standard fonts ship with pdfjs-dist and are read from disk (never
 * fetched). No `eval`, no console output.
 */
export const PDF_OPTIONS = {
  verbosity: 0,
  cMapUrl: `${join(pdfjsDir, 'cmaps')}/`,
  cMapPacked: true,
  standardFontDataUrl: `${join(pdfjsDir, 'standard_fonts')}/`,
  isEvalSupported: false,
};
