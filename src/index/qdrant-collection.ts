import type { Schemas } from '@qdrant/js-client-rest';
import { z } from 'zod';
import { DENSE_VECTOR, INDEXED_META_FIELDS, SPARSE_VECTOR } from './contract.js';
import type { CollectionInfo } from './store.js';

/** What the adapter needs to know about the collection it is configured for. */
export interface CollectionWants {
  collection: string;
  denseDim?: number | undefined;
  sparse: boolean;
  shardNumber?: number | undefined;
  replicationFactor?: number | undefined;
  writeConsistencyFactor?: number | undefined;
}

/** The create-collection body: per-tenant HNSW graphs keyed on `meta.collection_name` (m 0, payload_m 16), no global graph. */
export function createCollectionBody(w: CollectionWants): Schemas['CreateCollection'] {
  const body: Schemas['CreateCollection'] = {
    vectors: w.denseDim === undefined ? {} : { [DENSE_VECTOR]: { size: w.denseDim, distance: 'Cosine' } },
    hnsw_config: { m: 0, payload_m: 16 },
  };
  if (w.sparse) body.sparse_vectors = { [SPARSE_VECTOR]: { modifier: 'idf' } };
  // Distributed mode (docs/scaling.md): only what is configured is sent, so a single node keeps
  // Qdrant's defaults.
  if (w.shardNumber !== undefined) body.shard_number = w.shardNumber;
  if (w.replicationFactor !== undefined) body.replication_factor = w.replicationFactor;
  if (w.writeConsistencyFactor !== undefined) body.write_consistency_factor = w.writeConsistencyFactor;
  return body;
}

/**
 * One keyword payload index per filterable meta field (the tenant key gets Qdrant's tenant layout),
 * and an integer one on `meta.split_id`: the document listing reads one point per file (split 0).
 */
export function payloadIndexBodies(): Schemas['CreateFieldIndex'][] {
  const keywords: Schemas['CreateFieldIndex'][] = INDEXED_META_FIELDS.map((field) =>
    field === 'collection_name'
      ? { field_name: `meta.${field}`, field_schema: { type: 'keyword', is_tenant: true } }
      : { field_name: `meta.${field}`, field_schema: 'keyword' },
  );
  return [...keywords, { field_name: 'meta.split_id', field_schema: 'integer' }];
}

function indexType(body: Schemas['CreateFieldIndex']): string {
  const schema = body.field_schema;
  if (typeof schema === 'string') return schema;
  return schema && 'type' in schema ? String(schema.type) : 'keyword';
}

const vectorParams = z.object({ size: z.number(), distance: z.string() });

/** The part of GET /collections/{name} the adapter reads. */
export const collectionInfoSchema = z.object({
  config: z.object({
    params: z.object({
      // Either one unnamed vector `{size, distance}` (keyed '' here) or a map of named ones.
      vectors: z
        .union([vectorParams.transform((p) => ({ '': p })), z.record(z.string(), vectorParams)])
        .optional(),
      sparse_vectors: z.record(z.string(), z.object({ modifier: z.string().nullish() }).nullish()).nullish(),
      shard_number: z.number().nullish(),
      replication_factor: z.number().nullish(),
      write_consistency_factor: z.number().nullish(),
    }),
  }),
  payload_schema: z.record(z.string(), z.object({ data_type: z.string() })).default({}),
});
export type QdrantCollectionInfo = z.infer<typeof collectionInfoSchema>;

interface Layout {
  dense: Map<string, { size: number; distance: string }>;
  sparse: Map<string, { modifier: string | undefined }>;
}

function layout(info: QdrantCollectionInfo): Layout {
  const dense = new Map<string, { size: number; distance: string }>();
  for (const [name, p] of Object.entries(info.config.params.vectors ?? {})) dense.set(name, p);
  const sparse = new Map<string, { modifier: string | undefined }>();
  for (const [name, p] of Object.entries(info.config.params.sparse_vectors ?? {})) {
    sparse.set(name, { modifier: p?.modifier ?? undefined });
  }
  return { dense, sparse };
}

function names(m: Map<string, unknown>): string {
  return m.size === 0 ? 'none' : [...m.keys()].map((n) => (n === '' ? '(unnamed)' : n)).join(', ');
}

export function describeInfo(info: QdrantCollectionInfo): CollectionInfo {
  const { dense, sparse } = layout(info);
  const d = dense.get(DENSE_VECTOR);
  const out: CollectionInfo = {
    exists: true,
    hasSparse: sparse.has(SPARSE_VECTOR),
    vectorNames: [...dense.keys(), ...sparse.keys()],
  };
  if (d) out.denseSize = d.size;
  return out;
}

export interface Compatibility {
  /** Incompatibilities that make the index unusable: ensureCollection throws with these. */
  errors: string[];
  /** Differences that degrade results but keep working (e.g. sparse without the IDF modifier). */
  warnings: string[];
}

/** Compares an existing collection with the configuration, naming both sides of every difference. */
export function checkCompatibility(w: CollectionWants, info: QdrantCollectionInfo): Compatibility {
  const { dense, sparse } = layout(info);
  const errors: string[] = [];
  const warnings: string[] = [];
  const c = `Qdrant collection "${w.collection}"`;
  if (w.denseDim !== undefined) {
    const d = dense.get(DENSE_VECTOR);
    if (!d) {
      errors.push(
        `${c} has no "${DENSE_VECTOR}" vector (its dense vectors: ${names(dense)}), but Kilde is configured for "${DENSE_VECTOR}" of size ${w.denseDim} (EMBEDDING_DIM)`,
      );
    } else {
      if (d.size !== w.denseDim) {
        errors.push(`${c} has "${DENSE_VECTOR}" of size ${d.size}, but EMBEDDING_DIM is ${w.denseDim}`);
      }
      if (d.distance !== 'Cosine') {
        errors.push(`${c} has "${DENSE_VECTOR}" with distance ${d.distance}, but Kilde needs Cosine`);
      }
    }
  }
  const s = sparse.get(SPARSE_VECTOR);
  if (w.sparse && !s) {
    errors.push(
      `${c} has no "${SPARSE_VECTOR}" vector (its sparse vectors: ${names(sparse)}), but sparse embeddings are enabled`,
    );
  }
  const p = info.config.params;
  for (const [setting, wanted, actual] of [
    ['QDRANT_SHARD_NUMBER', w.shardNumber, p.shard_number],
    ['QDRANT_REPLICATION_FACTOR', w.replicationFactor, p.replication_factor],
    ['QDRANT_WRITE_CONSISTENCY_FACTOR', w.writeConsistencyFactor, p.write_consistency_factor],
  ] as const) {
    if (wanted !== undefined && actual !== undefined && actual !== null && actual !== wanted) {
      warnings.push(
        `${c} has ${setting.slice('QDRANT_'.length).toLowerCase()} ${actual}, but ${setting} is ${wanted}: settings apply when Kilde creates the collection; change an existing one with Qdrant's cluster API`,
      );
    }
  }
  if (s && s.modifier !== 'idf') {
    warnings.push(
      `${c} has "${SPARSE_VECTOR}" with modifier ${s.modifier ?? 'none'}, not idf: BM25 query vectors carry no IDF, so lexical ranking is weaker`,
    );
  }
  return { errors, warnings };
}

/** Payload indexes the collection still lacks, and fields indexed with another type. */
export function missingPayloadIndexes(info: QdrantCollectionInfo): {
  missing: Schemas['CreateFieldIndex'][];
  wrongType: string[];
} {
  const missing: Schemas['CreateFieldIndex'][] = [];
  const wrongType: string[] = [];
  for (const body of payloadIndexBodies()) {
    const have = info.payload_schema[body.field_name];
    if (!have) missing.push(body);
    else if (have.data_type !== indexType(body)) wrongType.push(`${body.field_name} (${have.data_type})`);
  }
  return { missing, wrongType };
}
