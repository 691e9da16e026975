import type { FakeSparse, PointId } from './bodies.js';

/** An error the fake answers with Qdrant's error envelope. */
export class FakeHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface StoredPoint {
  id: PointId;
  version: number;
  dense: Map<string, number[]>;
  sparse: Map<string, FakeSparse>;
  payload: Record<string, unknown>;
}

export interface Collection {
  dense: Map<string, { size: number; distance: string }>;
  /** True when created with one unnamed vector (`vectors: {size, distance}`). */
  unnamed: boolean;
  sparse: Map<string, { modifier: 'none' | 'idf' }>;
  hnsw: { m: number; payload_m: number | null };
  /** Cluster layout as created (1 each when not given, as a standalone Qdrant reports it). */
  layout: { shard_number: number; replication_factor: number; write_consistency_factor: number };
  indexes: Map<
    string,
    { type?: string; params?: { type: 'keyword'; is_tenant?: boolean | null | undefined } }
  >;
  points: Map<string, StoredPoint>;
  version: number;
}

export interface Scored {
  point: StoredPoint;
  score: number;
}

export const key = (id: PointId) => (typeof id === 'number' ? `n:${id}` : `u:${id.toLowerCase()}`);
/** Qdrant orders integer ids before UUIDs; UUIDs by their bytes (= lowercase hex text). */
export function compareIds(a: PointId, b: PointId): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0;
}

export function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export function checkSparse(s: FakeSparse): void {
  if (s.indices.length !== s.values.length || new Set(s.indices).size !== s.indices.length) {
    throw new FakeHttpError(
      400,
      'Wrong input: sparse vector indices must be unique and match values in length',
    );
  }
}
