import type { WorkerPool } from '../pool/worker-pool.js';
import { toDocument } from './document.js';
import type { Extractor } from './extractor.js';
import type { FileKind } from './file-type.js';

export interface PooledExtractorOptions {
  /** Engine name, as in EXTRACTION_ENGINE. */
  name: string;
  only?: readonly FileKind[];
  /** Close the pool with the extractor (when it was made for this extractor alone). */
  ownsPool?: boolean;
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
    ...(opts.ownsPool ? { close: () => pool.close() } : {}),
  };
}
