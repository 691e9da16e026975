import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { WrappedPdfiumModule } from '@embedpdf/pdfium';
import { type ExtractionLimits, limitExceeded } from '../limits.js';
import { pdfInfo } from '../pdf-info.js';
import type { OutlineEntry, PdfLine } from './pdf-headings.js';
import { checkPageCount, type PdfPart, type PdfSplit, partPages, WHOLE, withPage } from './pdf-parts.js';

/*
 * The PDF reader on PDFium (Chrome's PDF engine, compiled to WebAssembly by @embedpdf/pdfium), the
 * default of `EXTRACTION_PDF_READER`. It gives what the pdf.js reader (pdf.ts) gives, a `PdfPart`:
 * each page's lines with their largest font size, the outline, the info dictionary; so headings,
 * page spans, the split of a large PDF and the limits work alike. On real PDFs it reads 2–10 times
 * faster (PDFium parses embedded fonts in C++ where pdf.js rebuilds them in JavaScript;
 * docs/performance.md). Its memory is WebAssembly linear memory, outside V8's heap limit, so it may
 * grow only up to that limit (`Instance`). What it cannot open, or where it stops, is left to pdf.js.
 */

/** FPDF_GetLastError codes (fpdfview.h) that end the reading: pdf.js could not do better. */
const FINAL_ERRORS: Record<number, string> = {
  4: 'the PDF is password-protected',
  5: 'the PDF uses an unsupported security handler',
};

/**
 * PDFium could not open the document or one of its pages (a damaged file, a page tree nested past
 * its depth limit): `readPdfPart` (pdf-parts.ts) reads that part with pdf.js instead.
 */
export class PdfiumCannotRead extends Error {}
/** Outline entries read at most (a hostile outline may be huge or loop). */
const MAX_OUTLINE = 10_000;

/**
 * One PDFium instance and the bound on its memory. Its linear memory is outside V8's heap limit, so
 * it may grow only up to `EXTRACTION_MAX_HEAP_MB` (its `grow` refuses beyond; PDFium then fails an
 * allocation and aborts). An instance that aborted is dropped: the next document gets a fresh one.
 */
interface Instance {
  m: WrappedPdfiumModule;
  /** Bytes the linear memory may reach (the document being read's `maxHeapMb`). */
  limit: number;
  /** A growth past `limit` was refused during this document. */
  refused: boolean;
  /** PDFium aborted (a trap, or an allocation that failed): the instance is unusable. */
  aborted: boolean;
}

/** What of a `WebAssembly.Memory` is used here (the lib Kilde compiles against has no WebAssembly types). */
interface LinearMemory {
  buffer: ArrayBuffer;
  grow(pages: number): number;
}

let current: Promise<Instance> | undefined;

/** The module's linear memory as bytes (Emscripten's `HEAPU8`, re-read: it is replaced when memory grows). */
const heapBytes = (m: WrappedPdfiumModule): Uint8Array =>
  (m.pdfium as unknown as { HEAPU8: Uint8Array }).HEAPU8;

/** The PDFium instance, compiled and initialised once per process (≈60 ms of CPU). */
function pdfium(): Promise<Instance> {
  current ??= (async () => {
    const { init } = await import('@embedpdf/pdfium');
    const wasm = await readFile(createRequire(import.meta.url).resolve('@embedpdf/pdfium/pdfium.wasm'));
    const instance = { limit: Number.POSITIVE_INFINITY, refused: false, aborted: false } as Instance;
    instance.m = await init({
      wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength),
      // Its refused growths and its abort are reported to the caller as errors, not printed.
      printErr: () => undefined,
      onAbort: () => {
        instance.aborted = true;
      },
    } as Parameters<typeof init>[0]);
    const memory = (instance.m.pdfium.wasmExports as unknown as { memory: LinearMemory }).memory;
    const grow = memory.grow.bind(memory);
    memory.grow = (pages: number) => {
      if (memory.buffer.byteLength + pages * 65_536 > instance.limit) {
        instance.refused = true;
        throw new RangeError('over EXTRACTION_MAX_HEAP_MB');
      }
      return grow(pages);
    };
    instance.m.PDFiumExt_Init();
    return instance;
  })();
  return current;
}

/** Compiles and initialises PDFium now (a worker started ahead of its first document). */
export async function loadPdfium(): Promise<void> {
  await pdfium();
}

/** Part `part` of `of` of a PDF (see `partPages`), as `readPdfjsPart` of pdf.ts reads it. */
export async function readPdfiumPart(
  path: string,
  limits: ExtractionLimits,
  split: PdfSplit = WHOLE,
): Promise<PdfPart> {
  const bytes = await readFile(path);
  const loading = pdfium();
  let instance: Instance;
  try {
    instance = await loading;
  } catch (err) {
    // PDFium did not start (a damaged install): pdf.js reads the PDF; the next one tries again.
    if (current === loading) current = undefined;
    throw new PdfiumCannotRead(`PDFium could not start: ${err instanceof Error ? err.message : String(err)}`);
  }
  // From here on all is synchronous: no other read can change the limit or the flags meanwhile.
  const exceeded = () =>
    limitExceeded(`processing needed more than ${limits.maxHeapMb} MiB of memory`, 'EXTRACTION_MAX_HEAP_MB');
  instance.limit = limits.maxHeapMb * 2 ** 20;
  instance.refused = false;
  if (heapBytes(instance.m).byteLength > instance.limit) throw exceeded();
  let read: PdfPart;
  try {
    read = readWith(instance, bytes, limits, split);
  } catch (err) {
    // A WebAssembly trap (`RuntimeError`) leaves the instance as unusable as an abort does.
    const trapped = instance.aborted || (err instanceof Error && err.name === 'RuntimeError');
    if (trapped && current === loading) current = undefined;
    if (instance.refused) throw exceeded();
    if (!trapped) throw err;
    throw new PdfiumCannotRead(`PDFium stopped: ${err instanceof Error ? err.message : String(err)}`);
  }
  // PDFium went on without memory it asked for: what it read may lack text.
  if (instance.refused) throw exceeded();
  return read;
}

function readWith(instance: Instance, bytes: Uint8Array, limits: ExtractionLimits, split: PdfSplit): PdfPart {
  const { m } = instance;
  const heap = m.pdfium.wasmExports;
  const data = heap.malloc(bytes.length);
  if (data === 0) throw new PdfiumCannotRead('PDFium could not hold the file');
  heapBytes(m).set(bytes, data);
  const doc = m.FPDF_LoadMemDocument(data, bytes.length, '');
  const matrix = heap.malloc(24);
  try {
    if (doc === 0) {
      const code = m.FPDF_GetLastError();
      const final = FINAL_ERRORS[code];
      if (final) throw new Error(final);
      throw new PdfiumCannotRead(`PDFium could not open the document (error ${code})`);
    }
    const pageCount = m.FPDF_GetPageCount(doc);
    checkPageCount(pageCount, limits);
    const [from, to] = partPages(pageCount, split.part, split.of, split.minPages);
    const lines: PdfLine[][] = [];
    let chars = 0;
    for (let n = from; n <= to; n++) {
      const page = pageLines(m, doc, n - 1, matrix);
      chars = withPage(chars, page, limits);
      lines.push(page);
    }
    if (split.part !== 0) return { pageCount, from, lines };
    return { pageCount, from, lines, outline: readOutline(m, doc), metadata: pdfInfo(readInfo(m, doc)) };
  } finally {
    // An aborted instance is dropped whole; nothing of it can be called any more.
    if (!instance.aborted) {
      if (doc !== 0) m.FPDF_CloseDocument(doc);
      heap.free(matrix);
      heap.free(data);
    }
  }
}

/**
 * A page's text as PDFium lays it out (its own reading order, line breaks and inserted spaces),
 * split into lines, each with the largest font size of its non-blank characters.
 */
function pageLines(m: WrappedPdfiumModule, doc: number, index: number, matrix: number): PdfLine[] {
  const heap = m.pdfium.wasmExports;
  const page = m.FPDF_LoadPage(doc, index);
  if (page === 0) throw new PdfiumCannotRead(`PDFium could not open page ${index + 1}`);
  const textPage = m.FPDFText_LoadPage(page);
  try {
    if (textPage === 0) throw new PdfiumCannotRead(`PDFium could not read the text of page ${index + 1}`);
    const count = m.FPDFText_CountChars(textPage);
    if (count <= 0) return [{ text: '', size: 0 }];
    // UTF-16: a character beyond the BMP takes two units, so room for two per character.
    const buffer = heap.malloc((2 * count + 1) * 2);
    let text: string;
    try {
      m.FPDFText_GetText(textPage, 0, count, buffer);
      text = m.pdfium.UTF16ToString(buffer, (2 * count + 1) * 2);
    } finally {
      heap.free(buffer);
    }
    const sizes = new PageSizes(m, textPage, matrix);
    const lines: PdfLine[] = [];
    let start = 0;
    const flush = (end: number, next: number) => {
      lines.push({ text: clean(text.slice(start, end)), size: sizes.line(start, end) });
      start = next;
    };
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 13) flush(i, text.charCodeAt(i + 1) === 10 ? ++i + 1 : i + 1);
      else if (c === 10) flush(i, i + 1);
    }
    flush(text.length, text.length);
    return lines;
  } finally {
    if (textPage !== 0) m.FPDFText_ClosePage(textPage);
    m.FPDF_ClosePage(page);
  }
}

/**
 * PDFium's marks out of the text: U+0002 for a hyphen it judged a line-end word break (kept as the
 * hyphen the page shows), U+FFFE/U+FFFF and NUL for characters it could not map; trailing spaces it
 * inserted before a line break.
 */
function clean(line: string): string {
  return line.replaceAll(HYPHEN_MARK, '-').replace(UNMAPPED, '').trimEnd();
}
const HYPHEN_MARK = String.fromCharCode(2);
const UNMAPPED = new RegExp(`[${String.fromCharCode(0)}\uFFFE\uFFFF]`, 'g');

/** PDFium's per-character calls, straight to the WebAssembly exports (the wrapped forms cost more per call). */
interface CharCalls {
  FPDFText_GetUnicode(textPage: number, index: number): number;
  FPDFText_GetFontSize(textPage: number, index: number): number;
  FPDFText_GetTextObject(textPage: number, index: number): number;
  FPDFText_GetMatrix(textPage: number, index: number, matrix: number): number;
}

const calls = new WeakMap<WrappedPdfiumModule, CharCalls>();

function charCalls(m: WrappedPdfiumModule): CharCalls {
  const known = calls.get(m);
  if (known) return known;
  const exports = m.pdfium.wasmExports as unknown as Partial<CharCalls>;
  const made: CharCalls = {
    FPDFText_GetUnicode: exports.FPDFText_GetUnicode ?? ((p, i) => m.FPDFText_GetUnicode(p, i)),
    FPDFText_GetFontSize: exports.FPDFText_GetFontSize ?? ((p, i) => m.FPDFText_GetFontSize(p, i)),
    FPDFText_GetTextObject: exports.FPDFText_GetTextObject ?? ((p, i) => m.FPDFText_GetTextObject(p, i)),
    FPDFText_GetMatrix: exports.FPDFText_GetMatrix ?? ((p, i, x) => Number(m.FPDFText_GetMatrix(p, i, x))),
  };
  calls.set(m, made);
  return made;
}

/**
 * Font sizes as the page sets them: PDFium's font size (the `Tf` operand, often 1) times the scale
 * of the character's matrix (text matrix and CTM), as pdf.js's transform gives them. Looked up once
 * per text object, whose characters share both.
 */
class PageSizes {
  readonly #call: CharCalls;
  #object = 0;
  #size = 0;

  constructor(
    private readonly m: WrappedPdfiumModule,
    private readonly textPage: number,
    /** 24 bytes for one FS_MATRIX (six floats). */
    private readonly matrix: number,
  ) {
    this.#call = charCalls(m);
  }

  /** The largest size of the non-blank characters of the page text's [start, end). */
  line(start: number, end: number): number {
    if (start >= end) return 0;
    const first = this.m.FPDFText_GetCharIndexFromTextIndex(this.textPage, start);
    const last = this.m.FPDFText_GetCharIndexFromTextIndex(this.textPage, end - 1);
    let max = 0;
    for (let i = Math.max(0, first); i <= last; i++) {
      if (this.#call.FPDFText_GetUnicode(this.textPage, i) <= 32) continue;
      const size = this.#of(i);
      if (size > max) max = size;
    }
    return max;
  }

  #of(index: number): number {
    const object = this.#call.FPDFText_GetTextObject(this.textPage, index);
    if (object !== 0 && object === this.#object) return this.#size;
    const size = this.#call.FPDFText_GetFontSize(this.textPage, index);
    let scale = 1;
    if (this.#call.FPDFText_GetMatrix(this.textPage, index, this.matrix)) {
      const [, , c = 0, d = 1] = new Float32Array(heapBytes(this.m).buffer, this.matrix, 6);
      scale = Math.hypot(c, d);
    }
    this.#object = object;
    this.#size = size * scale;
    return this.#size;
  }
}

/** The outline (bookmarks) in reading order, with depths and 0-based pages, as pdf.ts reads it. */
function readOutline(m: WrappedPdfiumModule, doc: number): OutlineEntry[] {
  const out: OutlineEntry[] = [];
  const seen = new Set<number>();
  const walk = (parent: number, level: number): void => {
    for (
      let bm = m.FPDFBookmark_GetFirstChild(doc, parent);
      bm !== 0;
      bm = m.FPDFBookmark_GetNextSibling(doc, bm)
    ) {
      if (seen.has(bm) || seen.size >= MAX_OUTLINE) return;
      seen.add(bm);
      const title = utf16(m, (buf, len) => m.FPDFBookmark_GetTitle(bm, buf, len));
      let dest = m.FPDFBookmark_GetDest(doc, bm);
      if (dest === 0) {
        const action = m.FPDFBookmark_GetAction(bm);
        if (action !== 0) dest = m.FPDFAction_GetDest(doc, action);
      }
      const page = dest === 0 ? -1 : m.FPDFDest_GetDestPageIndex(doc, dest);
      if (page >= 0 && title.trim() !== '') out.push({ title, level, page });
      walk(bm, level + 1);
    }
  };
  walk(0, 1);
  return out;
}

/** The info dictionary's fields `pdfInfo` reads. */
function readInfo(m: WrappedPdfiumModule, doc: number): Record<string, string> {
  const info: Record<string, string> = {};
  for (const key of ['Title', 'Subject', 'Author', 'CreationDate']) {
    const value = utf16(m, (buf, len) => m.FPDF_GetMetaText(doc, key, buf, len));
    if (value !== '') info[key] = value;
  }
  return info;
}

/** A PDFium string getter's UTF-16LE text: asked once for its length (bytes), once for the text. */
function utf16(m: WrappedPdfiumModule, get: (buffer: number, length: number) => number): string {
  const bytes = get(0, 0);
  if (bytes <= 2) return '';
  const heap = m.pdfium.wasmExports;
  const buffer = heap.malloc(bytes);
  try {
    get(buffer, bytes);
    return m.pdfium.UTF16ToString(buffer, bytes);
  } finally {
    heap.free(buffer);
  }
}
