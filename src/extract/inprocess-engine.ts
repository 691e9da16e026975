import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { KildeError } from '../errors.js';
import { extractionFailed, reasonOf, toDocument } from './document.js';
import type { ExtractedDocument, ExtractOptions, Extractor, SourceFile } from './extractor.js';
import { detectFileType, type FileKind, HEAD_BYTES } from './file-type.js';
import type { ReadContent } from './inprocess/content.js';
import type { PdfPart, PdfReader, PdfSplit } from './inprocess/pdf-parts.js';
import { checkTextSize, DEFAULT_LIMITS, type ExtractionLimits } from './limits.js';

type Reader = (path: string, limits: ExtractionLimits, opts: InprocessOptions) => Promise<ReadContent>;

/** Readers load their libraries on first use: a worker that only sees PDFs never loads mammoth. */
const office =
  (kind: FileKind): Reader =>
  async (p) =>
    (await import('./inprocess/office.js')).readOffice(p, kind);
const READERS: Record<FileKind, Reader> = {
  pdf: async (p, l, o) => (await import('./inprocess/pdf-parts.js')).readPdf(p, l, o.pdfReader),
  docx: async (p, l) => (await import('./inprocess/docx.js')).readDocx(p, l),
  pptx: office('pptx'),
  xlsx: office('xlsx'),
  odt: office('odt'),
  odp: office('odp'),
  ods: office('ods'),
  rtf: office('rtf'),
  epub: office('epub'),
  html: async (p, l) => (await import('./inprocess/html.js')).readHtml(p, l),
  markdown: async (p) => (await import('./inprocess/text.js')).readPlain(p),
  text: async (p) => (await import('./inprocess/text.js')).readPlain(p),
  csv: async (p) => (await import('./inprocess/text.js')).readDelimited(p, ','),
  tsv: async (p) => (await import('./inprocess/text.js')).readDelimited(p, '\t'),
};

/** Zip packages: judged by `checkArchive` before their reader inflates anything. */
const PACKAGES: ReadonlySet<FileKind> = new Set(['docx', 'pptx', 'xlsx', 'odt', 'odp', 'ods', 'epub']);

export interface InprocessOptions {
  /** Engine name reported in errors and on the extractor. */
  name: string;
  /** Restricts the accepted kinds (`pdf-inprocess`); all kinds when absent. */
  only?: readonly FileKind[];
  /** Per-document limits; the configured defaults when absent. */
  limits?: ExtractionLimits;
  /** The PDF text reader (`EXTRACTION_PDF_READER`); PDFium when absent. */
  pdfReader?: PdfReader;
}

/** What the format readers make of a file, before languages are detected. */
export interface ReadDocument {
  content: ReadContent;
  mime: string;
}

/**
 * Type sniffing, the limits and one reader per format: the part of the `inprocess` engine that
 * runs inside the extraction worker pool (see `src/pool/`).
 */
export async function readDocument(file: SourceFile, opts: InprocessOptions): Promise<ReadDocument> {
  const limits = opts.limits ?? DEFAULT_LIMITS;
  // A small upload kept in memory: plain text is read from it; any other kind from a file of it.
  if (file.data && !(await plainInMemory(file, file.data))) return readSpilled(file, file.data, opts);
  const start = file.data ? startOf(file.data) : readStart(file.path);
  const type = await detectFileType(file.path, file.filename, file.mimeType, start.head);
  if (type.kind === undefined) {
    throw extractionFailed(
      type.claimed
        ? `File content does not match its type: named or sent as ${type.claimed}, but it is not one (corrupt or mislabelled)`
        : `Unsupported file type: ${type.mime}`,
    );
  }
  if (opts.only && !opts.only.includes(type.kind)) {
    throw extractionFailed(
      `Unsupported file type: ${type.mime} (the ${opts.name} engine accepts ${opts.only.join(', ').toUpperCase()} only)`,
    );
  }
  let content: ReadContent;
  try {
    if (PACKAGES.has(type.kind)) await (await import('./zip-guard.js')).checkArchive(file.path, limits);
    content =
      start.whole && (type.kind === 'text' || type.kind === 'markdown')
        ? (await import('./inprocess/text.js')).plainContent(start.whole)
        : await READERS[type.kind](file.path, limits, opts);
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw extractionFailed(
      `Could not extract ${type.kind.toUpperCase()} file: ${reasonOf(err)}`,
      undefined,
      err,
    );
  }
  checkTextSize(content.text.length, limits);
  return { content, mime: type.mime };
}

/** Files up to this size are read whole by `readStart` (a text file is then not opened again). */
const WHOLE_BYTES = 64 * 1024;

/**
 * A file's first `HEAD_BYTES` for type sniffing, and the whole file when it is small. Read at once
 * and synchronously: this runs in a pool worker, one task at a time, and for a small file two
 * asynchronous opens and reads (the head, then the text) cost about 15 times the CPU of one
 * blocking read (0.14–0.3 s against 0.01 s for 1000 SciFact abstracts).
 */
function readStart(path: string): { head: Uint8Array; whole?: Buffer } {
  const fd = openSync(path, 'r');
  try {
    if (fstatSync(fd).size <= WHOLE_BYTES) {
      const whole = readFileSync(fd);
      return { head: whole.subarray(0, HEAD_BYTES), whole };
    }
    const head = Buffer.alloc(HEAD_BYTES);
    return { head: head.subarray(0, readSync(fd, head, 0, HEAD_BYTES, 0)) };
  } finally {
    closeSync(fd);
  }
}

/** A file's start as `readStart` reads it, from the file in memory. */
function startOf(data: Uint8Array): { head: Uint8Array; whole?: Buffer } {
  const whole = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return data.length <= WHOLE_BYTES
    ? { head: whole.subarray(0, HEAD_BYTES), whole }
    : { head: whole.subarray(0, HEAD_BYTES) };
}

/** Whether a file in memory is plain text read whole from memory (no reader needs a file of it). */
async function plainInMemory(file: SourceFile, data: Uint8Array): Promise<boolean> {
  if (data.length > WHOLE_BYTES || startsWithZip(data)) return false;
  const type = await detectFileType('', file.filename, file.mimeType, data.subarray(0, HEAD_BYTES));
  return type.kind === 'text' || type.kind === 'markdown';
}

const startsWithZip = (d: Uint8Array) => d[0] === 0x50 && d[1] === 0x4b && d[2] === 0x03 && d[3] === 0x04;

/** A file in memory that is not plain text: written to a file of its own, read as any file is. */
async function readSpilled(
  file: SourceFile,
  data: Uint8Array,
  opts: InprocessOptions,
): Promise<ReadDocument> {
  const { withTempDir, sourcePath } = await import('../ingest/temp-dir.js');
  return withTempDir(async (dir) => {
    const path = sourcePath(dir, file.filename);
    await writeFile(path, data, { flag: 'wx', mode: 0o600 });
    const { data: _kept, ...rest } = file;
    return readDocument({ ...rest, path }, opts);
  });
}

/**
 * Part `part` of `of` of a PDF the caller has already sniffed as one (a large PDF read by two pool
 * workers at once; see `createPooledExtractor`), with the errors `readDocument` would give.
 */
export async function readPdfPart(
  file: SourceFile,
  limits: ExtractionLimits,
  split: PdfSplit,
  reader?: PdfReader,
): Promise<PdfPart> {
  try {
    const { readPdfPart: read } = await import('./inprocess/pdf-parts.js');
    return await read(file.path, limits, split, reader);
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw extractionFailed(`Could not extract PDF file: ${reasonOf(err)}`, undefined, err);
  }
}

/** A PDF's parts as `readDocument` would have read it whole (the text limit applied to the whole). */
export async function joinPdf(
  parts: readonly PdfPart[],
  mime: string,
  limits: ExtractionLimits,
): Promise<ReadDocument> {
  const content = (await import('./inprocess/pdf-parts.js')).joinPdfParts(parts);
  checkTextSize(content.text.length, limits);
  return { content, mime };
}

/**
 * The pure-JavaScript engine in the calling thread: type sniffing, one reader per format, language
 * detection. Services run it through the worker pool (`createPooledExtractor`); this form serves
 * the pool's workers, tests and benches.
 */
export function createInprocessExtractor(opts: InprocessOptions = { name: 'inprocess' }): Extractor {
  return {
    name: opts.name,
    acceptsProfile: false,
    async extract(file: SourceFile, options?: ExtractOptions): Promise<ExtractedDocument[]> {
      options?.signal?.throwIfAborted();
      const { content, mime } = await readDocument(file, opts);
      options?.signal?.throwIfAborted();
      return [toDocument(content, mime)];
    },
  };
}
