import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { LanceCacheMb } from './lancedb-cache.js';
import type { VectorIndexSettings } from './lancedb-vector-index.js';
import type { VectorIndex } from './store.js';

/** How to reach the index; both services derive it from the same variables (docs/architecture.md, "The shared index contract"). */
export interface IndexSettings {
  /** `http(s)://…` selects Qdrant; a filesystem path or `file://` URI selects embedded LanceDB there. */
  uri: string;
  apiKey?: string;
  collection: string;
  /** Size of `text-dense`; undefined = lexical-only: no dense vector. */
  denseDim?: number;
  /** Create/use `text-sparse` (Qdrant). LanceDB always keeps a full-text index instead. */
  sparse: boolean;
  timeoutMs: number;
  /** Stemming/stop-word language of LanceDB's full-text index (the `SPARSE_LANGUAGE` value); default english. */
  language?: 'english' | 'danish';
  /** Qdrant's distributed mode (docs/scaling.md); unset fields are not sent (Qdrant's defaults). */
  cluster?: QdrantCluster;
  /** LanceDB: when to build the dense vector index and how queries search it (lancedb-vector-index.ts). */
  vectorIndex?: Partial<VectorIndexSettings>;
  /** LanceDB: bounds of the process's session caches, MiB (lancedb-session.ts); unset: Kilde's defaults. */
  cacheMb?: LanceCacheMb;
}

export interface QdrantCluster {
  shardNumber?: number;
  replicationFactor?: number;
  writeConsistencyFactor?: number;
  /** `ordering` of every write. */
  writeOrdering?: 'weak' | 'medium' | 'strong';
  /** `consistency` of every read: a replica count or `majority`/`quorum`/`all`. */
  readConsistency?: string;
}

export type IndexEngine = 'qdrant' | 'lancedb';

/** Which engine a URI selects: `http(s)://` is Qdrant, anything else a LanceDB directory. */
export function engineFor(uri: string): IndexEngine {
  return /^https?:\/\//i.test(uri) ? 'qdrant' : 'lancedb';
}

/** The LanceDB directory of a path or `file://` URI. */
export function lanceDirectory(uri: string): string {
  return uri.startsWith('file:') ? fileURLToPath(uri) : uri;
}

/** Opens (but does not create) the index the settings name; call `ensureCollection()` before writing. */
export async function openIndex(
  settings: IndexSettings,
  deps: { log: Logger; fetch?: typeof fetch },
): Promise<VectorIndex> {
  if (engineFor(settings.uri) === 'qdrant') {
    // Loaded lazily so the embedded mode never pulls in the Qdrant client (and vice versa).
    const { createQdrantIndex } = await import('./qdrant.js');
    return createQdrantIndex(settings, deps);
  }
  const { createLanceIndex } = await import('./lancedb.js');
  return createLanceIndex({ ...settings, uri: lanceDirectory(settings.uri) }, { log: deps.log });
}
