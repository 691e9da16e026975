import { stat } from 'node:fs/promises';
import yauzl from 'yauzl';
import { extractionFailed } from './document.js';
import { type ExtractionLimits, limitExceeded, nestingExceeded } from './limits.js';
import { XmlScanner } from './xml-scanner.js';

/** Entries this small may compress as well as they like: a ratio only matters for large ones. */
const RATIO_GRACE_BYTES = 1024 * 1024;
/** Package parts holding XML (or XHTML) that a reader will parse. */
const XML_PART = /\.(xml|rels|xhtml|html?|opf|ncx|svg)$/i;

/**
 * Judges an OOXML/ODF/EPUB package before any reader inflates it: first the central directory
 * alone (entry count, total uncompressed size, compression ratio of large entries and of the whole
 * package against its size on disk, which a bomb of many small entries cannot dodge), then each
 * entry as a stream that is counted and discarded — an entry that inflates to more than its
 * declared size fails there (yauzl checks it), and XML parts are scanned for nesting depth and
 * entity declarations (OOXML and ODF never declare entities; a part that does is an entity bomb).
 */
export async function checkArchive(path: string, limits: ExtractionLimits): Promise<void> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false, strictFileNames: false });
  } catch (err) {
    throw extractionFailed(`Could not read the zip package: ${(err as Error).message}`, undefined, err);
  }
  try {
    if (zip.entryCount > limits.maxArchiveEntries) {
      throw limitExceeded(
        `${zip.entryCount.toLocaleString('en')} zip entries, more than ${limits.maxArchiveEntries.toLocaleString('en')}`,
        'EXTRACTION_MAX_ARCHIVE_ENTRIES',
      );
    }
    const entries: yauzl.Entry[] = [];
    const fileBytes = (await stat(path)).size;
    let total = 0;
    for await (const entry of directoryOf(zip)) {
      entries.push(entry);
      total += entry.uncompressedSize;
      if (total > limits.maxArchiveBytes) {
        throw limitExceeded(
          `more than ${mib(limits.maxArchiveBytes)} uncompressed in the package`,
          'EXTRACTION_MAX_ARCHIVE_BYTES',
        );
      }
      const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
      if (entry.uncompressedSize > RATIO_GRACE_BYTES && ratio > limits.maxCompressionRatio) {
        throw limitExceeded(
          `a package entry compressed ${Math.round(ratio)}:1, more than ${limits.maxCompressionRatio}:1`,
          'EXTRACTION_MAX_COMPRESSION_RATIO',
        );
      }
    }
    // What every entry declares against the package's bytes on disk: no entry's own (forgeable)
    // compressed size is trusted here, and entries under the grace are counted too.
    const packageRatio = total / Math.max(1, fileBytes);
    if (total > RATIO_GRACE_BYTES && packageRatio > limits.maxCompressionRatio) {
      throw limitExceeded(
        `the package declares ${mib(total)} uncompressed in ${kib(fileBytes)}, ${Math.round(packageRatio)}:1, more than ${limits.maxCompressionRatio}:1`,
        'EXTRACTION_MAX_COMPRESSION_RATIO',
      );
    }
    for (const entry of entries) {
      if (entry.fileName.endsWith('/')) continue;
      await verifyEntry(zip, entry, limits);
    }
  } finally {
    zip.close();
  }
}

/** The central directory's entries; a malformed record is the file's fault (422), not a crash. */
async function* directoryOf(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  try {
    yield* zip.eachEntry();
  } catch (err) {
    if (err instanceof Error && err.name === 'KildeError') throw err;
    throw extractionFailed(`Could not read the zip package: ${(err as Error).message}`, undefined, err);
  }
}

async function verifyEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, limits: ExtractionLimits): Promise<void> {
  if (entry.isEncrypted()) throw extractionFailed('The package is encrypted');
  const scanner = XML_PART.test(entry.fileName)
    ? new XmlScanner(limits.maxNesting, (reason) =>
        reason === 'nesting'
          ? nestingExceeded(limits)
          : extractionFailed(`The package part ${entry.fileName} declares XML entities, which are refused`),
      )
    : undefined;
  let stream: NodeJS.ReadableStream;
  try {
    stream = await zip.openReadStreamPromise(entry);
  } catch (err) {
    throw extractionFailed(`Could not read the zip package: ${(err as Error).message}`, undefined, err);
  }
  try {
    for await (const chunk of stream) scanner?.write(chunk as Uint8Array);
  } catch (err) {
    if (err instanceof Error && err.name === 'KildeError') throw err;
    throw extractionFailed(`Could not read the zip package: ${(err as Error).message}`, undefined, err);
  }
}

function kib(bytes: number): string {
  return `${Math.ceil(bytes / 1024).toLocaleString('en')} KiB`;
}

function mib(bytes: number): string {
  return `${Math.round(bytes / 1048576).toLocaleString('en')} MiB`;
}
