import type { Logger } from 'pino';
import { describeCause } from '../errors.js';
import { denseMismatch } from '../index/dense-check.js';
import type { VectorIndex } from '../index/store.js';

/**
 * A settings mismatch between ingestion and retrieval raises no error by itself (wrong scores, empty
 * hits). Kilde checks what it can at start-up and warns loudly; it never refuses to start, because
 * the ingestion side may create the collection later.
 */
export async function checkIndexSettings(
  index: VectorIndex,
  c: {
    VECTORDB_INDEX: string;
    EMBEDDING_PROVIDER?: string | undefined;
    EMBEDDING_DIM?: number | undefined;
    ENABLE_HYBRID_SEARCH: boolean;
  },
  log: Logger,
): Promise<string[]> {
  const warnings: string[] = [];
  let info: Awaited<ReturnType<VectorIndex['describe']>>;
  try {
    info = await index.describe();
  } catch (err) {
    const w = `cannot inspect collection "${c.VECTORDB_INDEX}": ${describeCause(err)}`;
    log.warn({ check: 'index-settings' }, w);
    return [w];
  }
  if (!info.exists) {
    warnings.push(
      `collection "${c.VECTORDB_INDEX}" does not exist yet: searches return no hits until something is ingested`,
    );
  } else {
    const mismatch = denseMismatch(info, c);
    if (mismatch) warnings.push(`${mismatch} (readiness answers 503 until fixed)`);
    if (c.ENABLE_HYBRID_SEARCH && !info.hasSparse) {
      warnings.push(
        `ENABLE_HYBRID_SEARCH=true but collection "${c.VECTORDB_INDEX}" has no sparse/full-text side: client-side BM25 fusion will run`,
      );
    }
  }
  for (const w of warnings) log.warn({ check: 'index-settings' }, w);
  return warnings;
}
