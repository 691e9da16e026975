import { open, readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { unzipSync } from 'fflate';

export type FileKind =
  | 'pdf'
  | 'docx'
  | 'pptx'
  | 'xlsx'
  | 'odt'
  | 'odp'
  | 'ods'
  | 'epub'
  | 'rtf'
  | 'html'
  | 'markdown'
  | 'csv'
  | 'tsv'
  | 'text';

export interface DetectedType {
  /** Undefined when Kilde cannot extract this type; `mime` then names it. */
  kind: FileKind | undefined;
  mime: string;
  /** The supported type the file name or declared MIME type claims, when the content does not match it. */
  claimed?: string;
}

export const KIND_MIME: Record<FileKind, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  odt: 'application/vnd.oasis.opendocument.text',
  odp: 'application/vnd.oasis.opendocument.presentation',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  epub: 'application/epub+zip',
  rtf: 'application/rtf',
  html: 'text/html',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  text: 'text/plain',
};

const ODF_KINDS: Record<string, FileKind> = {
  'application/vnd.oasis.opendocument.text': 'odt',
  'application/vnd.oasis.opendocument.presentation': 'odp',
  'application/vnd.oasis.opendocument.spreadsheet': 'ods',
  'application/epub+zip': 'epub',
};

const TEXT_EXTENSIONS: Record<string, FileKind> = {
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.mdx': 'markdown',
  '.csv': 'csv',
  '.tsv': 'tsv',
  '.html': 'html',
  '.htm': 'html',
  '.xhtml': 'html',
  '.txt': 'text',
  '.text': 'text',
};

const ZIP_EXTENSIONS: Record<string, FileKind> = {
  '.docx': 'docx',
  '.pptx': 'pptx',
  '.xlsx': 'xlsx',
  '.odt': 'odt',
  '.odp': 'odp',
  '.ods': 'ods',
  '.epub': 'epub',
};

const MIME_KINDS: Record<string, FileKind> = Object.fromEntries(
  Object.entries(KIND_MIME).map(([k, m]) => [m, k as FileKind]),
);

/** Magic numbers of common formats Kilde does not extract, so the error can name them. */
const BINARY_SIGNATURES: [number[], string][] = [
  [[0x89, 0x50, 0x4e, 0x47], 'image/png'],
  [[0xff, 0xd8, 0xff], 'image/jpeg'],
  [[0x47, 0x49, 0x46, 0x38], 'image/gif'],
  [[0x49, 0x49, 0x2a, 0x00], 'image/tiff'],
  [[0x4d, 0x4d, 0x00, 0x2a], 'image/tiff'],
  [[0xd0, 0xcf, 0x11, 0xe0], 'application/x-ole-storage'],
  [[0x1f, 0x8b], 'application/gzip'],
  [[0x7f, 0x45, 0x4c, 0x46], 'application/x-elf'],
];

const startsWith = (buf: Uint8Array, sig: readonly number[]) => sig.every((b, i) => buf[i] === b);

/** How much of a file's start `detectFileType` reads. */
export const HEAD_BYTES = 8192;

/**
 * Detects the type from magic bytes first, then the extension, then a declared MIME type. `head`:
 * the file's first `HEAD_BYTES` bytes (or all of a shorter file) when the caller has read them.
 */
export async function detectFileType(
  path: string,
  filename: string,
  declaredMime?: string,
  given?: Uint8Array,
): Promise<DetectedType> {
  const head = given ?? (await readHead(path, HEAD_BYTES));
  const ext = extname(filename).toLowerCase();
  if (startsWith(head, [0x25, 0x50, 0x44, 0x46, 0x2d])) return known('pdf');
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) return detectZip(path, ext);
  if (startsWith(head, [0x7b, 0x5c, 0x72, 0x74, 0x66])) return known('rtf');
  const binary = BINARY_SIGNATURES.find(([sig]) => startsWith(head, sig));
  if (binary) return { kind: undefined, mime: legacyOfficeMime(ext) ?? binary[1] };
  if (head.includes(0)) {
    // Binary content we cannot name. When the name or the declared type claims a format we do read
    // (a truncated PDF, say), report that mismatch instead of calling the claimed format unsupported.
    const claimed = declaredMime?.split(';')[0]?.trim().toLowerCase() || undefined;
    const claimedKind = (claimed && MIME_KINDS[claimed]) || (ext === '.pdf' ? 'pdf' : undefined);
    if (claimedKind)
      return { kind: undefined, mime: 'application/octet-stream', claimed: KIND_MIME[claimedKind] };
    return { kind: undefined, mime: claimed ?? 'application/octet-stream' };
  }
  const byExt = TEXT_EXTENSIONS[ext];
  if (byExt) return known(byExt);
  const declared = declaredMime
    ? MIME_KINDS[declaredMime.split(';')[0]?.trim().toLowerCase() ?? '']
    : undefined;
  if (declared && isTextKind(declared)) return known(declared);
  const start = new TextDecoder().decode(head.subarray(0, 512)).trimStart().toLowerCase();
  if (start.startsWith('<!doctype html') || start.startsWith('<html')) return known('html');
  return known('text');
}

function known(kind: FileKind): DetectedType {
  return { kind, mime: KIND_MIME[kind] };
}

function isTextKind(kind: FileKind) {
  return ['html', 'markdown', 'csv', 'tsv', 'text'].includes(kind);
}

function legacyOfficeMime(ext: string): string | undefined {
  return {
    '.doc': 'application/msword',
    '.xls': 'application/vnd.ms-excel',
    '.ppt': 'application/vnd.ms-powerpoint',
  }[ext];
}

async function readHead(path: string, bytes: number): Promise<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const buf = new Uint8Array(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** OOXML and ODF are both zip packages; their entry names tell them apart without inflating anything. */
async function detectZip(path: string, ext: string): Promise<DetectedType> {
  const data = new Uint8Array(await readFile(path));
  const names: string[] = [];
  let mimetype: string | undefined;
  try {
    const files = unzipSync(data, {
      filter: (f) => {
        names.push(f.name);
        return f.name === 'mimetype' && f.originalSize < 200;
      },
    });
    const raw = files.mimetype;
    if (raw) mimetype = new TextDecoder().decode(raw).trim();
  } catch {
    // A truncated or corrupt package named as one says so rather than "unsupported".
    const named = ZIP_EXTENSIONS[ext];
    return named
      ? { kind: undefined, mime: 'application/zip', claimed: KIND_MIME[named] }
      : { kind: undefined, mime: 'application/zip' };
  }
  if (names.includes('word/document.xml')) return known('docx');
  if (names.includes('ppt/presentation.xml')) return known('pptx');
  if (names.includes('xl/workbook.xml')) return known('xlsx');
  const odf = mimetype ? ODF_KINDS[mimetype] : undefined;
  if (odf) return known(odf);
  return { kind: undefined, mime: mimetype ?? legacyOfficeMime(ext) ?? 'application/zip' };
}

/**
 * The library a file's reader loads, from its name: `pdf`, `docx`, `html`, `office`, or '' for
 * plain text, which needs none. A hint (the pool's `affinity`, which uploads share passes): the
 * file's content decides its reader.
 */
export function readerLibrary(filename: string): string {
  const ext = extname(filename).toLowerCase();
  if (ext === '.pdf') return 'pdf';
  if (ext === '.docx') return 'docx';
  if (ext === '.html' || ext === '.htm' || ext === '.xhtml') return 'html';
  if (/^\.(?:pptx|xlsx|odt|odp|ods|rtf|epub)$/.test(ext)) return 'office';
  return '';
}
