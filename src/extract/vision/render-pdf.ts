import { readFile } from 'node:fs/promises';
import { createCanvas } from '@napi-rs/canvas';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { KildeError } from '../../errors.js';
import { extractionFailed, reasonOf } from '../document.js';
import type { ReadMetadata } from '../inprocess/content.js';
import { type ExtractionLimits, limitExceeded } from '../limits.js';
import { pdfInfo } from '../pdf-info.js';
import { PDF_OPTIONS } from '../pdfjs-options.js';

/** One rendered page: the PNG, its size in pixels, the page's size in points and the density used. */
export interface RenderedPage {
  page: number;
  png: Uint8Array;
  width: number;
  height: number;
  widthPt: number;
  heightPt: number;
  dpi: number;
}

export interface RenderedPdf {
  pages: RenderedPage[];
  /** Pages of the whole PDF (more than `pages` when the cap cut it). */
  totalPages: number;
  metadata: ReadMetadata;
}

/**
 * Most pixels of one page bitmap (16 MiP, 64 MiB of RGBA outside the V8 heap). A page larger than
 * this at the requested density (a poster, a drawing sheet) is rendered at the density that fits,
 * so no page can make the worker's native memory grow without bound.
 */
export const MAX_PAGE_PIXELS = 4096 * 4096;

/**
 * Rasterises the first `maxPages` pages of a PDF at `dpi` to PNG with pdf.js on a Skia canvas
 * (`@napi-rs/canvas`). Runs in the extraction worker pool, page by page: one bitmap exists at a
 * time (the canvas is reused and resized), each page is encoded before the next one is drawn and
 * released by pdf.js after, so memory follows the largest page, not the document.
 */
export async function renderPdf(
  path: string,
  opts: { dpi: number; maxPages: number; limits: ExtractionLimits },
): Promise<RenderedPdf> {
  try {
    return await render(path, opts);
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw extractionFailed(`Could not render the PDF: ${reasonOf(err)}`, undefined, err);
  }
}

async function render(
  path: string,
  opts: { dpi: number; maxPages: number; limits: ExtractionLimits },
): Promise<RenderedPdf> {
  const data = new Uint8Array(await readFile(path));
  const task = getDocument({ data, ...PDF_OPTIONS });
  try {
    const pdf = await task.promise;
    const totalPages = pdf.numPages;
    if (totalPages > opts.limits.maxPages) {
      throw limitExceeded(
        `${totalPages.toLocaleString('en')} pages, more than ${opts.limits.maxPages.toLocaleString('en')}`,
        'EXTRACTION_MAX_PAGES',
      );
    }
    const canvas = createCanvas(1, 1);
    const pages: RenderedPage[] = [];
    for (let n = 1; n <= Math.min(totalPages, opts.maxPages); n++) {
      const page = await pdf.getPage(n);
      try {
        const size = page.getViewport({ scale: 1 });
        const dpi = densityFor(size.width, size.height, opts.dpi);
        const viewport = page.getViewport({ scale: dpi / 72 });
        // Assigning the size reallocates (and clears) the one bitmap.
        canvas.width = Math.max(1, Math.round(viewport.width));
        canvas.height = Math.max(1, Math.round(viewport.height));
        const ctx = canvas.getContext('2d');
        ctx.fillStyle = '#ffffff';
        ctx.fillRect(0, 0, canvas.width, canvas.height);
        // pdf.js draws on any canvas with the DOM's 2D API; Skia's implements the part it uses.
        await page.render({ canvas, viewport }).promise;
        pages.push({
          page: n,
          png: new Uint8Array(await canvas.encode('png')),
          width: canvas.width,
          height: canvas.height,
          widthPt: size.width,
          heightPt: size.height,
          dpi,
        });
      } finally {
        page.cleanup();
      }
    }
    // Release the last bitmap before the PNGs travel back.
    canvas.width = 1;
    canvas.height = 1;
    const { info } = await pdf.getMetadata();
    return { pages, totalPages, metadata: { ...pdfInfo(toRecord(info)), page_count: totalPages } };
  } finally {
    await task.destroy();
  }
}

/** The requested density, or the highest one at which the page stays within `MAX_PAGE_PIXELS`. */
export function densityFor(widthPt: number, heightPt: number, dpi: number): number {
  const pixels = ((widthPt * dpi) / 72) * ((heightPt * dpi) / 72);
  if (pixels <= MAX_PAGE_PIXELS) return dpi;
  return Math.floor(dpi * Math.sqrt(MAX_PAGE_PIXELS / pixels));
}

function toRecord(info: unknown): Record<string, unknown> {
  return info !== null && typeof info === 'object' ? Object.fromEntries(Object.entries(info)) : {};
}
