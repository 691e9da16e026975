import type { z } from 'zod';
import {
  type CreateCollectionBody,
  type countSchema,
  type createIndexSchema,
  type deleteSchema,
  type FakeSparse,
  type PointId,
  type QueryBody,
  type scrollSchema,
  sparseSchema,
  type upsertSchema,
} from './bodies.js';
import { filterMatches } from './filter.js';

/** An error the fake answers with Qdrant's error envelope. */
export class FakeHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface StoredPoint {
  id: PointId;
  version: number;
  dense: Map<string, number[]>;
  sparse: Map<string, FakeSparse>;
  payload: Record<string, unknown>;
}

interface Collection {
  dense: Map<string, { size: number; distance: string }>;
  /** True when created with one unnamed vector (`vectors: {size, distance}`). */
  unnamed: boolean;
  sparse: Map<string, { modifier: 'none' | 'idf' }>;
  hnsw: { m: number; payload_m: number | null };
  indexes: Map<string, { params?: { type: 'keyword'; is_tenant?: boolean | null | undefined } }>;
  points: Map<string, StoredPoint>;
  version: number;
}

interface Scored {
  point: StoredPoint;
  score: number;
}

const key = (id: PointId) => (typeof id === 'number' ? `n:${id}` : `u:${id.toLowerCase()}`);
/** Qdrant orders integer ids before UUIDs; UUIDs by their bytes (= lowercase hex text). */
function compareIds(a: PointId, b: PointId): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0;
}

function cosine(a: number[], b: number[]): number {
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

/** In-memory Qdrant semantics for the endpoints Kilde uses. */
export class QdrantMemory {
  readonly collections = new Map<string, Collection>();

  private get(name: string): Collection {
    const c = this.collections.get(name);
    if (!c) throw new FakeHttpError(404, `Not found: Collection \`${name}\` doesn't exist!`);
    return c;
  }

  create(name: string, body: CreateCollectionBody): boolean {
    if (this.collections.has(name)) {
      throw new FakeHttpError(409, `Wrong input: Collection \`${name}\` already exists!`);
    }
    const unnamed = body.vectors?.unnamed ?? false;
    const dense = new Map<string, { size: number; distance: string }>();
    for (const [n, p] of Object.entries(body.vectors?.named ?? {})) dense.set(n, p);
    const sparse = new Map<string, { modifier: 'none' | 'idf' }>();
    for (const [n, p] of Object.entries(body.sparse_vectors ?? {})) {
      sparse.set(n, { modifier: p.modifier ?? 'none' });
    }
    const hnsw = { m: body.hnsw_config?.m ?? 16, payload_m: body.hnsw_config?.payload_m ?? null };
    this.collections.set(name, {
      dense,
      unnamed,
      sparse,
      hnsw,
      indexes: new Map(),
      points: new Map(),
      version: 0,
    });
    return true;
  }

  exists(name: string) {
    return { exists: this.collections.has(name) };
  }

  info(name: string) {
    const c = this.get(name);
    const params = (p: { size: number; distance: string }) => ({
      size: p.size,
      distance: p.distance,
      on_disk: false,
    });
    const vectors = c.unnamed
      ? params(c.dense.get('') ?? { size: 1, distance: 'Cosine' })
      : Object.fromEntries([...c.dense].map(([n, p]) => [n, params(p)]));
    const sparse_vectors = Object.fromEntries(
      [...c.sparse].map(([n, p]) => [n, p.modifier === 'idf' ? { modifier: 'idf' } : {}]),
    );
    const payload_schema = Object.fromEntries(
      [...c.indexes].map(([field, ix]) => [
        field,
        {
          data_type: 'keyword',
          ...(ix.params ? { params: ix.params } : {}),
          points: [...c.points.values()].filter((p) => this.has(p.payload, field)).length,
        },
      ]),
    );
    return {
      status: 'green',
      optimizer_status: 'ok',
      indexed_vectors_count: 0,
      points_count: c.points.size,
      segments_count: 1,
      config: {
        params: {
          vectors,
          ...(c.sparse.size > 0 ? { sparse_vectors } : {}),
          shard_number: 1,
          replication_factor: 1,
          write_consistency_factor: 1,
          on_disk_payload: true,
        },
        hnsw_config: {
          m: c.hnsw.m,
          ef_construct: 100,
          full_scan_threshold: 10000,
          max_indexing_threads: 0,
          on_disk: false,
          ...(c.hnsw.payload_m === null ? {} : { payload_m: c.hnsw.payload_m }),
        },
        optimizer_config: {
          deleted_threshold: 0.2,
          vacuum_min_vector_number: 1000,
          default_segment_number: 0,
          max_segment_size: null,
          memmap_threshold: null,
          indexing_threshold: 10000,
          flush_interval_sec: 5,
          max_optimization_threads: null,
        },
        wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
        quantization_config: null,
      },
      payload_schema,
    };
  }

  private has(payload: Record<string, unknown>, field: string): boolean {
    let v: unknown = payload;
    for (const part of field.split('.')) {
      if (!v || typeof v !== 'object') return false;
      v = (v as Record<string, unknown>)[part];
    }
    return v !== undefined && v !== null;
  }

  createIndex(name: string, body: z.infer<typeof createIndexSchema>) {
    const c = this.get(name);
    const params = typeof body.field_schema === 'string' ? undefined : body.field_schema;
    c.indexes.set(body.field_name, params ? { params } : {});
    return this.ack(c);
  }

  private ack(c: Collection) {
    c.version += 1;
    return { operation_id: c.version, status: 'completed' };
  }

  upsert(name: string, body: z.infer<typeof upsertSchema>) {
    const c = this.get(name);
    const staged: StoredPoint[] = [];
    for (const p of body.points) {
      const named = Array.isArray(p.vector) ? { '': p.vector } : p.vector;
      const point: StoredPoint = {
        id: p.id,
        version: c.version + 1,
        dense: new Map(),
        sparse: new Map(),
        payload: p.payload ?? {},
      };
      for (const [vname, value] of Object.entries(named)) {
        if (Array.isArray(value)) {
          const spec = c.dense.get(vname);
          if (!spec) throw new FakeHttpError(400, `Wrong input: Not existing vector name error: ${vname}`);
          if (value.length !== spec.size) {
            throw new FakeHttpError(
              400,
              `Wrong input: Vector dimension error: expected dim: ${spec.size}, got ${value.length}`,
            );
          }
          point.dense.set(vname, value);
        } else {
          if (!c.sparse.has(vname))
            throw new FakeHttpError(400, `Wrong input: Not existing vector name error: ${vname}`);
          this.checkSparse(value);
          point.sparse.set(vname, value);
        }
      }
      staged.push(point);
    }
    for (const p of staged) c.points.set(key(p.id), p);
    return this.ack(c);
  }

  private checkSparse(s: FakeSparse) {
    if (s.indices.length !== s.values.length || new Set(s.indices).size !== s.indices.length) {
      throw new FakeHttpError(
        400,
        'Wrong input: sparse vector indices must be unique and match values in length',
      );
    }
  }

  private matching(c: Collection, filter: unknown): StoredPoint[] {
    return [...c.points.values()].filter((p) => filterMatches(filter, p.payload));
  }

  delete(name: string, body: z.infer<typeof deleteSchema>) {
    const c = this.get(name);
    const doomed = 'filter' in body ? this.matching(c, body.filter).map((p) => p.id) : body.points;
    for (const id of doomed) c.points.delete(key(id));
    return this.ack(c);
  }

  count(name: string, body: z.infer<typeof countSchema>) {
    return { count: this.matching(this.get(name), body.filter).length };
  }

  scroll(name: string, body: z.infer<typeof scrollSchema>) {
    const c = this.get(name);
    const all = this.matching(c, body.filter).sort((a, b) => compareIds(a.id, b.id));
    const offset = body.offset;
    const start =
      offset === undefined || offset === null ? 0 : all.findIndex((p) => compareIds(p.id, offset) >= 0);
    const limit = body.limit ?? 10;
    const from = start < 0 ? all.length : start;
    const page = all.slice(from, from + limit);
    const next = all[from + limit];
    return {
      points: page.map((p) =>
        body.with_payload === false ? { id: p.id } : { id: p.id, payload: p.payload },
      ),
      next_page_offset: next ? next.id : null,
    };
  }

  query(name: string, body: QueryBody) {
    const c = this.get(name);
    const hits = this.run(c, body);
    return {
      points: hits.map((h) => ({
        id: h.point.id,
        version: h.point.version,
        score: h.score,
        ...(body.with_payload ? { payload: h.point.payload } : {}),
      })),
    };
  }

  private run(c: Collection, q: QueryBody): Scored[] {
    const limit = q.limit ?? 10;
    const prefetches =
      q.prefetch === undefined || q.prefetch === null
        ? []
        : Array.isArray(q.prefetch)
          ? q.prefetch
          : [q.prefetch];
    const query = q.query;
    if (query && !Array.isArray(query) && ('fusion' in query || 'rrf' in query)) {
      if (prefetches.length === 0) throw new FakeHttpError(400, 'Wrong input: fusion requires prefetch');
      const k = 'rrf' in query ? (query.rrf.k ?? 2) : 2;
      const fused = new Map<string, Scored>();
      for (const pf of prefetches) {
        this.run(c, pf).forEach((h, rank) => {
          const prev = fused.get(key(h.point.id));
          fused.set(key(h.point.id), { point: h.point, score: (prev?.score ?? 0) + 1 / (rank + k) });
        });
      }
      return this.top(
        [...fused.values()].filter((h) => filterMatches(q.filter, h.point.payload)),
        limit,
      );
    }
    if (prefetches.length > 0) throw new FakeHttpError(501, 'fake: only fusion queries over prefetches');
    if (query === undefined || query === null) throw new FakeHttpError(501, 'fake: query without a vector');
    const using = q.using ?? '';
    const candidates = this.matching(c, q.filter);
    if (Array.isArray(query)) {
      const spec = c.dense.get(using);
      if (!spec) throw new FakeHttpError(400, `Wrong input: Not existing vector name error: ${using}`);
      if (query.length !== spec.size) {
        throw new FakeHttpError(
          400,
          `Wrong input: Vector dimension error: expected dim: ${spec.size}, got ${query.length}`,
        );
      }
      const scored = candidates.flatMap((p) => {
        const v = p.dense.get(using);
        return v ? [{ point: p, score: cosine(query, v) }] : [];
      });
      return this.top(scored, limit);
    }
    const sparseQuery = sparseSchema.parse(query);
    const spec = c.sparse.get(using);
    if (!spec) throw new FakeHttpError(400, `Wrong input: Not existing vector name error: ${using}`);
    this.checkSparse(sparseQuery);
    return this.top(this.sparseScores(c, using, spec.modifier, sparseQuery, candidates), limit);
  }

  /** Dot product over shared indices; with the IDF modifier each query weight is scaled by BM25's IDF. */
  private sparseScores(
    c: Collection,
    using: string,
    modifier: string,
    q: FakeSparse,
    candidates: StoredPoint[],
  ): Scored[] {
    const withVector = [...c.points.values()].filter((p) => p.sparse.has(using));
    const idf = (index: number) => {
      const n = withVector.filter((p) => p.sparse.get(using)?.indices.includes(index)).length;
      const N = withVector.length;
      return Math.log(1 + (N - n + 0.5) / (n + 0.5));
    };
    const out: Scored[] = [];
    for (const p of candidates) {
      const v = p.sparse.get(using);
      if (!v) continue;
      let score = 0;
      let shared = false;
      q.indices.forEach((index, i) => {
        const at = v.indices.indexOf(index);
        if (at < 0) return;
        shared = true;
        const w = modifier === 'idf' ? idf(index) : 1;
        score += (q.values[i] ?? 0) * w * (v.values[at] ?? 0);
      });
      if (shared) out.push({ point: p, score });
    }
    return out;
  }

  private top(hits: Scored[], limit: number): Scored[] {
    return hits.sort((a, b) => b.score - a.score || compareIds(a.point.id, b.point.id)).slice(0, limit);
  }
}
