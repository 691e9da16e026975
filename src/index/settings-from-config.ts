import { join } from 'node:path';
import type { IndexSettings } from './open.js';

export interface IndexConfigFields {
  KILDE_DATA_DIR: string;
  VECTORDB_URI?: string | undefined;
  VECTORDB_API_KEY?: string | undefined;
  VECTORDB_INDEX: string;
  VECTORDB_TIMEOUT: number;
  EMBEDDING_PROVIDER?: string | undefined;
  EMBEDDING_DIM?: number | undefined;
}

/** Where the index lives: `VECTORDB_URI`, or the embedded LanceDB directory under the data dir. */
export function resolveIndexUri(c: Pick<IndexConfigFields, 'KILDE_DATA_DIR' | 'VECTORDB_URI'>): string {
  return c.VECTORDB_URI ?? join(c.KILDE_DATA_DIR, 'lancedb');
}

/** The index settings both services derive from the same variables (so they cannot disagree). */
export function indexSettingsFrom(c: IndexConfigFields, sparse: boolean): IndexSettings {
  const lexicalOnly = c.EMBEDDING_PROVIDER === 'none' || c.EMBEDDING_PROVIDER === undefined;
  return {
    uri: resolveIndexUri(c),
    ...(c.VECTORDB_API_KEY ? { apiKey: c.VECTORDB_API_KEY } : {}),
    collection: c.VECTORDB_INDEX,
    ...(lexicalOnly || c.EMBEDDING_DIM === undefined ? {} : { denseDim: c.EMBEDDING_DIM }),
    sparse,
    timeoutMs: c.VECTORDB_TIMEOUT * 1000,
  };
}
