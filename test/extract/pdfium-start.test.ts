import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { readPdf } from '../../src/extract/inprocess/pdf-parts.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { DOCUMENTS } from '../fixtures/index.js';

// PDFium that does not start, as with a damaged install (its WebAssembly file missing or corrupt).
const starts = vi.hoisted(() => ({ count: 0 }));
vi.mock('@embedpdf/pdfium', () => ({
  init: async () => {
    starts.count += 1;
    throw new Error('both async and sync fetching of the wasm failed');
  },
}));

describe('PDFium that does not start', () => {
  it('leaves the PDF to pdf.js, and tries again for the next one', async () => {
    const path = join(DOCUMENTS, 'multi_page.pdf');
    const first = await readPdf(path, DEFAULT_LIMITS, 'pdfium');
    expect(first.text).toContain('Pre-Digital Era');
    expect(first.pages).toHaveLength(5);
    await readPdf(path, DEFAULT_LIMITS, 'pdfium');
    expect(starts.count).toBe(2);
  });
});
