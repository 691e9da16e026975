import { stat } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { KildeError, revive } from '../errors.js';
import { timedOutItem, type WorkerPool } from '../pool/worker-pool.js';
import { extractionFailed, toDocument } from './document.js';
import type { ExtractedDocument, Extractor, SourceFile } from './extractor.js';
import { detectFileType, type FileKind, readerLibrary } from './file-type.js';
import { openPlainText } from './inprocess/text-stream.js';
import { checkTextSize, type ExtractionLimits } from './limits.js';
import type { ExtractTasks } from './pool-tasks.js';

export interface PooledExtractorOptions {
  /** Engine name, as in EXTRACTION_ENGINE. */
  name: string;
  only?: readonly FileKind[];
  /** Close the pool with the extractor (when it was made for this extractor alone). */
  ownsPool?: boolean;
  /** The text limit of a streamed file (`openText`); the pool's workers hold the others. */
  limits?: Pick<ExtractionLimits, 'maxTextChars'>;
  /** When a PDF is read in two parts at once (`PDF_SPLIT` with `EXTRACTION_PDF_SPLIT`); tests lower it; `false` (the default) never splits. */
  pdfSplit?: PdfSplit | false;
}

/**
 * A PDF of at least `minBytes` is read by two workers at once, each half of its pages, when two
 * workers are free at that moment and the machine has a core to spare (`spareCore`); below
 * `minPages` pages the second finds nothing to do (it has opened the document to learn that).
 * Measured in docs/performance.md ("A large PDF on both cores, and one worker per library"):
 * pdf.js's per-page text layout is most of a large PDF's time and one worker would run it while
 * the other core idles; in parts it costs about a quarter more CPU (each part warms pdf.js up) and
 * a second worker's memory, so on a machine whose cores are busy anyway it only costs.
 */
export interface PdfSplit {
  minBytes: number;
  minPages: number;
  spareCore?: () => boolean;
}

/** The system load (1-minute average) leaves at least half a core idle. */
export const spareCore = (): boolean => loadavg()[0]! < availableParallelism() - 0.5;

export const PDF_SPLIT: PdfSplit = { minBytes: 1024 * 1024, minPages: 64, spareCore };

/**
 * The `inprocess` / `pdf-inprocess` engines as services run them: reading the file and detecting
 * its languages happen in the worker pool under the per-document limits (detection was a quarter of
 * the event loop's busy time when ingesting many small files; docs/performance.md).
 */
export function createPooledExtractor(
  pool: WorkerPool<ExtractTasks>,
  opts: PooledExtractorOptions,
): Extractor {
  const only = opts.only ? { only: opts.only } : {};
  const split = opts.pdfSplit ?? false;
  const documentOf = ({
    content,
    mime,
    languages,
  }: ExtractTasks['extract']['output']): ExtractedDocument[] => [toDocument(content, mime, [], languages)];
  /** Whether a file of this size may be read in parts now (the file type is judged after). */
  const maySplit = (bytes: number): boolean =>
    split !== false && bytes >= split.minBytes && pool.free >= 2 && (split.spareCore ?? spareCore)();
  /**
   * A large PDF in two `pdf-part` tasks side by side and one `pdf-join`, when two workers are free
   * now; undefined when the file is read in one task as usual. Either part's error is the file's,
   * the first part's first (both report a corrupt file or a limit alike).
   */
  const readSplit = async (
    file: SourceFile,
    bytes: number,
    signal: AbortSignal | undefined,
  ): Promise<ExtractTasks['extract']['output'] | undefined> => {
    if (!split || file.data || !maySplit(bytes)) return undefined;
    const type = await detectFileType(file.path, file.filename, file.mimeType);
    if (type.kind !== 'pdf' || (opts.only && !opts.only.includes('pdf')) || pool.free < 2) return undefined;
    const parts = await Promise.allSettled(
      [0, 1].map((part) =>
        pool.run(
          { kind: 'pdf-part', file: wireFile(file), part, of: 2, minPages: split.minPages },
          { signal, affinity: ['pdf'] },
        ),
      ),
    );
    const failed = parts.find((p) => p.status === 'rejected');
    if (failed) throw failed.reason;
    const read = parts.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []));
    return pool.run({ kind: 'pdf-join', parts: read, mime: type.mime }, { signal });
  };
  return {
    name: opts.name,
    acceptsProfile: false,
    // Its workers read a small upload kept in memory (inprocess-engine.ts, `readDocument`).
    acceptsData: true,
    async extract(file, options) {
      const signal = options?.signal;
      const bytes = await sizeOf(file);
      const read =
        (split ? await readSplit(file, bytes, signal) : undefined) ??
        (await pool.run(
          { kind: 'extract', file: wireFile(file), engine: opts.name, ...only },
          { signal, affinity: librariesOf([file]), weight: bytes },
        ));
      return documentOf(read);
    },
    /**
     * Small files in a few `extract-many` tasks (two per worker), so a pass of them costs a few IPC
     * round trips instead of one per file; a larger file (a PDF, say) gets a task of its own, so
     * the workers share uneven files as they free up. Each file keeps its own time limit, result
     * and error: should a task fail as a whole (its worker timed out, ran out of heap or died), a
     * file that ran past its time limit gets that error and the others are read again, without it.
     */
    async extractMany(files, options) {
      const signal = options?.signal;
      const out: Array<PromiseSettledResult<ExtractedDocument[]>> = [];
      const sizes = await Promise.all(files.map(sizeOf));
      const alone = files.flatMap((_, i) => (sizes[i]! > GROUPED_FILE_BYTES ? [i] : []));
      // Small files grouped by the library that reads them, so a group loads few libraries.
      const small = files
        .flatMap((_, i) => (sizes[i]! > GROUPED_FILE_BYTES ? [] : [i]))
        .sort(
          (a, b) =>
            readerLibrary(files[a]!.filename).localeCompare(readerLibrary(files[b]!.filename)) || a - b,
        );
      const group = async (ids: readonly number[]): Promise<void> => {
        if (ids.length === 0) return;
        let results: ExtractTasks['extract-many']['output'];
        try {
          const members = ids.map((i) => files[i]!);
          results = await pool.run(
            { kind: 'extract-many', files: members.map(wireFile), engine: opts.name, ...only },
            { signal, affinity: librariesOf(members), weight: ids.reduce((n, i) => n + sizes[i]!, 0) },
          );
        } catch (err) {
          const late = timedOutItem(err);
          if (ids.length === 1 || signal?.aborted) {
            for (const i of ids) out[i] = { status: 'rejected', reason: err };
          } else if (late !== undefined) {
            out[ids[late]!] = { status: 'rejected', reason: err };
            await group(ids.filter((_, k) => k !== late));
          } else {
            // Out of heap or a crash: each file alone, so the error lands on the file that caused it.
            await Promise.all(ids.map((i) => group([i])));
          }
          return;
        }
        results.forEach((r, k) => {
          out[ids[k]!] = r.ok
            ? { status: 'fulfilled', value: documentOf(r.value) }
            : { status: 'rejected', reason: revive(r.error) };
        });
      };
      /** A large file: a task of its own, or two parts side by side when it is a large PDF. */
      const one = async (i: number): Promise<void> => {
        // Queued at once, before the small files' groups (the larger files start first), unless it may be split.
        if (!maySplit(sizes[i]!)) return group([i]);
        let read: ExtractTasks['extract']['output'] | undefined;
        try {
          read = await readSplit(files[i]!, sizes[i]!, signal);
        } catch (err) {
          out[i] = { status: 'rejected', reason: err };
          return;
        }
        if (read) out[i] = { status: 'fulfilled', value: documentOf(read) };
        else await group([i]);
      };
      // Two groups per worker, but none under GROUP_MIN_BYTES: a few small files are one task, so a
      // small job starts one worker, not all of them (each costs ≈0.3 s of CPU to start).
      const smallBytes = small.reduce((n, i) => n + sizes[i]!, 0);
      const groups = Math.min(
        small.length,
        pool.size * 2,
        Math.max(1, Math.floor(smallBytes / GROUP_MIN_BYTES)),
      );
      await Promise.all([
        ...alone.map(one),
        ...Array.from({ length: groups }, (_, g) =>
          group(small.filter((_, k) => Math.floor((k * groups) / small.length) === g)),
        ),
      ]);
      return out;
    },
    /**
     * A large .txt/.md file is read in this thread as a stream (text-stream.ts), never whole: the
     * worker would build the whole string, copy it to this thread and hold the file's bytes while
     * decoding (three copies of a 100 MB file). Reading plain text needs none of the pool's isolation.
     */
    async openText(file, { minBytes, signal }) {
      // A file kept in memory is small: read whole, by a worker.
      if (file.data || (file.bytes ?? (await stat(file.path)).size) <= minBytes) return undefined;
      const type = await detectFileType(file.path, file.filename, file.mimeType);
      if (type.kind !== 'text' && type.kind !== 'markdown') return undefined;
      if (opts.only && !opts.only.includes(type.kind)) return undefined;
      let text: Awaited<ReturnType<typeof openPlainText>>;
      try {
        text = await openPlainText(file.path, signal);
      } catch (err) {
        if (err instanceof KildeError || signal?.aborted) throw err;
        throw extractionFailed(
          `Could not extract ${type.kind.toUpperCase()} file: ${String(err)}`,
          undefined,
          err,
        );
      }
      if (opts.limits) checkTextSize(text.chars, opts.limits);
      const content = { text: '', metadata: text.title ? { title: text.title } : {} };
      return { doc: toDocument(content, type.mime, [], text.languages), pieces: text.pieces };
    },
    ...(opts.ownsPool ? { close: () => pool.close() } : {}),
  };
}

function librariesOf(files: readonly SourceFile[]): string[] {
  return [...new Set(files.map((f) => readerLibrary(f.filename)))].filter(Boolean);
}

/** Files up to this size are read together in `extract-many` tasks; a larger one has a task of its own. */
const GROUPED_FILE_BYTES = 64 * 1024;
/** The least bytes of small files worth a task of their own (`extractMany`'s groups). */
export const GROUP_MIN_BYTES = 32 * 1024;

/** A file's size: as its caller measured it, else from the file system (0 when it cannot be read). */
function sizeOf(file: SourceFile): Promise<number> {
  if (file.bytes !== undefined) return Promise.resolve(file.bytes);
  if (file.data) return Promise.resolve(file.data.length);
  return stat(file.path).then(
    (s) => s.size,
    () => 0,
  );
}

/** What the worker needs of a file (no other property crosses the process boundary). */
function wireFile(file: SourceFile): SourceFile {
  return {
    path: file.path,
    filename: file.filename,
    ...(file.mimeType ? { mimeType: file.mimeType } : {}),
    ...(file.data ? { data: file.data } : {}),
  };
}
