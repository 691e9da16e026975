import type { Schemas } from '@qdrant/js-client-rest';
import { z } from 'zod';
import {
  type ChunkMeta,
  DENSE_VECTOR,
  type IndexPoint,
  SPARSE_VECTOR,
  type SparseVector,
  type StoredPoint,
  withPageFields,
} from './contract.js';

/** Point ↔ Qdrant wire mapping: payload `{content, meta}`, named vectors, ids and cursors. */

// Meta is returned exactly as stored (the chat platform shows it). Points written by other tools
// (the Python reference, or before versioning) may lack Kilde's newer fields, so only the tenant key
// is required and the other contract fields are type-checked when present.
const metaFields = z.looseObject({
  collection_name: z.string(),
  collection_type: z.string().optional(),
  file_id: z.string().optional(),
  ingest_version: z.string().optional(),
  split_id: z.number().optional(),
});
const metaSchema = z.custom<ChunkMeta>((v) => metaFields.safeParse(v).success, {
  message: 'meta lacks a string collection_name or has mistyped contract fields',
});
const payloadSchema = z.object({ content: z.string().nullish(), meta: metaSchema });

const pointIdSchema = z.union([z.string(), z.number()]);
export const queryResult = z.object({
  points: z.array(z.object({ id: pointIdSchema, score: z.number(), payload: z.unknown() })),
});
export const scrollResult = z.object({
  points: z.array(z.object({ id: pointIdSchema, payload: z.unknown() })),
  next_page_offset: pointIdSchema.nullish(),
});
export const countResult = z.object({ count: z.number() });
export const updateResult = z.object({ status: z.string() });

/** The stored point, or the reason its payload is not in Kilde's layout. */
export function toStored(id: string | number, payload: unknown): { point: StoredPoint } | { issue: string } {
  const p = payloadSchema.safeParse(payload);
  if (!p.success) return { issue: p.error.issues[0]?.message ?? 'invalid payload' };
  return { point: { id: String(id), content: p.data.content ?? '', meta: withPageFields(p.data.meta) } };
}

export function checkDense(vector: readonly number[], denseDim: number | undefined, what: string): void {
  if (denseDim !== undefined && vector.length !== denseDim) {
    throw new Error(`${what} has ${vector.length} dimensions, but EMBEDDING_DIM (text-dense) is ${denseDim}`);
  }
}

export function sparseInput(s: SparseVector): Schemas['SparseVector'] {
  return { indices: [...s.indices], values: [...s.values] };
}

/**
 * Named vectors are optional per point in Qdrant: a point without one is simply absent from that
 * side's search (as in lexical-only writes), so only malformed vectors are refused.
 */
export function toPointStruct(p: IndexPoint, denseDim: number | undefined): Schemas['PointStruct'] {
  const vector: Record<string, number[] | Schemas['SparseVector']> = {};
  if (p.dense) {
    checkDense(p.dense, denseDim, `point ${p.id}`);
    vector[DENSE_VECTOR] = p.dense;
  }
  if (p.sparse) {
    if (p.sparse.indices.length !== p.sparse.values.length) {
      throw new Error(`point ${p.id}: sparse indices and values differ in length`);
    }
    vector[SPARSE_VECTOR] = sparseInput(p.sparse);
  }
  return { id: p.id, vector, payload: { content: p.content, meta: p.meta } };
}

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * Cursors are the next point id as text; numeric ids (other writers) go back as numbers. Anything
 * else is no cursor this adapter returned (a point id is a UUID or an unsigned integer).
 */
export function parseCursor(cursor: string): string | number {
  if (/^\d{1,15}$/.test(cursor)) return Number(cursor);
  if (UUID.test(cursor)) return cursor;
  throw new Error('invalid scroll cursor');
}
