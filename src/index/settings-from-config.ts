import { join } from 'node:path';
import { defaultCacheMb, type LanceCacheMb } from './lancedb-cache.js';
import type { VectorIndexSettings } from './lancedb-vector-index.js';
import type { IndexSettings, QdrantCluster } from './open.js';

export interface IndexConfigFields {
  KILDE_DATA_DIR: string;
  VECTORDB_URI?: string | undefined;
  VECTORDB_API_KEY?: string | undefined;
  VECTORDB_INDEX: string;
  VECTORDB_TIMEOUT: number;
  EMBEDDING_PROVIDER?: string | undefined;
  EMBEDDING_DIM?: number | undefined;
  QDRANT_SHARD_NUMBER?: number | undefined;
  QDRANT_REPLICATION_FACTOR?: number | undefined;
  QDRANT_WRITE_CONSISTENCY_FACTOR?: number | undefined;
  QDRANT_WRITE_ORDERING?: 'weak' | 'medium' | 'strong' | undefined;
  QDRANT_READ_CONSISTENCY?: string | undefined;
  LANCEDB_VECTOR_INDEX_MIN_ROWS?: number | undefined;
  LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS?: number | undefined;
  LANCEDB_VECTOR_INDEX_EF?: number | undefined;
  LANCEDB_VECTOR_INDEX_REFINE?: number | undefined;
  LANCEDB_INDEX_CACHE_MB?: number | undefined;
  LANCEDB_METADATA_CACHE_MB?: number | undefined;
}

function vectorIndexFrom(c: IndexConfigFields): Partial<VectorIndexSettings> {
  const v: Partial<VectorIndexSettings> = {};
  if (c.LANCEDB_VECTOR_INDEX_MIN_ROWS !== undefined) v.minRows = c.LANCEDB_VECTOR_INDEX_MIN_ROWS;
  if (c.LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS !== undefined) v.annMinRows = c.LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS;
  if (c.LANCEDB_VECTOR_INDEX_EF !== undefined) v.ef = c.LANCEDB_VECTOR_INDEX_EF;
  if (c.LANCEDB_VECTOR_INDEX_REFINE !== undefined) v.refine = c.LANCEDB_VECTOR_INDEX_REFINE;
  return v;
}

/** The LanceDB cache bounds; the index cache, unset, sized for a dense index when there is one. */
function cacheFrom(c: IndexConfigFields, lexicalOnly: boolean): LanceCacheMb {
  const defaults = defaultCacheMb(!lexicalOnly);
  return {
    index: c.LANCEDB_INDEX_CACHE_MB ?? defaults.index,
    metadata: c.LANCEDB_METADATA_CACHE_MB ?? defaults.metadata,
  };
}

function clusterFrom(c: IndexConfigFields): QdrantCluster {
  const cluster: QdrantCluster = {};
  if (c.QDRANT_SHARD_NUMBER !== undefined) cluster.shardNumber = c.QDRANT_SHARD_NUMBER;
  if (c.QDRANT_REPLICATION_FACTOR !== undefined) cluster.replicationFactor = c.QDRANT_REPLICATION_FACTOR;
  if (c.QDRANT_WRITE_CONSISTENCY_FACTOR !== undefined)
    cluster.writeConsistencyFactor = c.QDRANT_WRITE_CONSISTENCY_FACTOR;
  if (c.QDRANT_WRITE_ORDERING !== undefined) cluster.writeOrdering = c.QDRANT_WRITE_ORDERING;
  if (c.QDRANT_READ_CONSISTENCY !== undefined) cluster.readConsistency = c.QDRANT_READ_CONSISTENCY.trim();
  return cluster;
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
    cluster: clusterFrom(c),
    vectorIndex: vectorIndexFrom(c),
    cacheMb: cacheFrom(c, lexicalOnly),
  };
}
