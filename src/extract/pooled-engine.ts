import { stat } from 'node:fs/promises';
import { KildeError } from '../errors.js';
import type { TaskOutputs } from '../pool/tasks.js';
import { timedOutItem, type WorkerPool } from '../pool/worker-pool.js';
import { extractionFailed, toDocument } from './document.js';
import type { ExtractedDocument, Extractor, SourceFile } from './extractor.js';
import { detectFileType, type FileKind } from './file-type.js';
import { openPlainText } from './inprocess/text-stream.js';
import { checkTextSize, type ExtractionLimits } from './limits.js';

export interface PooledExtractorOptions {
  /** Engine name, as in EXTRACTION_ENGINE. */
  name: string;
  only?: readonly FileKind[];
  /** Close the pool with the extractor (when it was made for this extractor alone). */
  ownsPool?: boolean;
  /** The text limit of a streamed file (`openText`); the pool's workers hold the others. */
  limits?: Pick<ExtractionLimits, 'maxTextChars'>;
}

/**
 * The `inprocess` / `pdf-inprocess` engines as services run them: reading the file and detecting
 * its languages happen in the worker pool under the per-document limits (detection was a quarter of
 * the event loop's busy time when ingesting many small files; docs/performance.md).
 */
export function createPooledExtractor(pool: WorkerPool, opts: PooledExtractorOptions): Extractor {
  const only = opts.only ? { only: opts.only } : {};
  const documentOf = ({ content, mime, languages }: TaskOutputs['extract']): ExtractedDocument[] => [
    toDocument(content, mime, [], languages),
  ];
  return {
    name: opts.name,
    acceptsProfile: false,
    async extract(file, options) {
      const read = await pool.run(
        { kind: 'extract', file: wireFile(file), engine: opts.name, ...only },
        { signal: options?.signal },
      );
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
      const sizes = await Promise.all(
        files.map((f) =>
          stat(f.path).then(
            (s) => s.size,
            () => 0,
          ),
        ),
      );
      const alone = files.flatMap((_, i) => (sizes[i]! > GROUPED_FILE_BYTES ? [i] : []));
      const small = files.flatMap((_, i) => (sizes[i]! > GROUPED_FILE_BYTES ? [] : [i]));
      const group = async (ids: readonly number[]): Promise<void> => {
        if (ids.length === 0) return;
        let results: TaskOutputs['extract-many'];
        try {
          results = await pool.run(
            { kind: 'extract-many', files: ids.map((i) => wireFile(files[i]!)), engine: opts.name, ...only },
            { signal },
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
            : { status: 'rejected', reason: new KildeError(r.error.code, r.error.status, r.error.message) };
        });
      };
      const groups = Math.min(small.length, pool.size * 2);
      await Promise.all([
        ...alone.map((i) => group([i])),
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
      if ((await stat(file.path)).size <= minBytes) return undefined;
      const type = await detectFileType(file.path, file.filename, file.mimeType);
      if (type.kind !== 'text' && type.kind !== 'markdown') return undefined;
      if (opts.only && !opts.only.includes(type.kind)) return undefined;
      let text: Awaited<ReturnType<typeof openPlainText>>;
      try {
        text = await openPlainText(file.path, signal);
      } catch (err) {
        if (err instanceof KildeError || signal?.aborted) throw err;
        throw extractionFailed(`Could not extract ${type.kind.toUpperCase()} file: ${String(err)}`, 422, err);
      }
      if (opts.limits) checkTextSize(text.chars, opts.limits);
      const content = { text: '', metadata: text.title ? { title: text.title } : {} };
      return { doc: toDocument(content, type.mime, [], text.languages), pieces: text.pieces };
    },
    ...(opts.ownsPool ? { close: () => pool.close() } : {}),
  };
}

/** Files up to this size are read together in `extract-many` tasks; a larger one has a task of its own. */
const GROUPED_FILE_BYTES = 64 * 1024;

/** What the worker needs of a file (no other property crosses the process boundary). */
function wireFile(file: SourceFile): SourceFile {
  return { path: file.path, filename: file.filename, ...(file.mimeType ? { mimeType: file.mimeType } : {}) };
}
