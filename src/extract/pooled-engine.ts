import { stat } from 'node:fs/promises';
import { KildeError } from '../errors.js';
import type { WorkerPool } from '../pool/worker-pool.js';
import { extractionFailed, toDocument } from './document.js';
import type { Extractor } from './extractor.js';
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
  return {
    name: opts.name,
    acceptsProfile: false,
    async extract(file, options) {
      const { content, mime, languages } = await pool.run(
        {
          kind: 'extract',
          file: {
            path: file.path,
            filename: file.filename,
            ...(file.mimeType ? { mimeType: file.mimeType } : {}),
          },
          engine: opts.name,
          ...(opts.only ? { only: opts.only } : {}),
        },
        { signal: options?.signal },
      );
      return [toDocument(content, mime, [], languages)];
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
