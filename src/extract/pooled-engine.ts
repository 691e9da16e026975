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
 * The `inprocess` / `pdf-inprocess` engines as services run them: reading the file happens in the
 * worker pool under the per-document limits; only language detection (a few samples of the text)
 * runs here.
 */
export function createPooledExtractor(pool: WorkerPool, opts: PooledExtractorOptions): Extractor {
  return {
    name: opts.name,
    acceptsProfile: false,
    async extract(file, options) {
      const { content, mime } = await pool.run(
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
      return [toDocument(content, mime)];
    },
    ...(opts.ownsPool ? { close: () => pool.close() } : {}),
  };
}
