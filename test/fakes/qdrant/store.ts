import type { z } from 'zod';
import type {
  batchSchema,
  CreateCollectionBody,
  countSchema,
  createIndexSchema,
  deleteSchema,
  facetSchema,
  QueryBody,
  scrollSchema,
  setPayloadSchema,
  upsertSchema,
} from './bodies.js';
import { type Collection, checkSparse, compareIds, FakeHttpError, key, type StoredPoint } from './model.js';
import { matching, runQuery } from './query.js';

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
      layout: {
        shard_number: body.shard_number ?? 1,
        replication_factor: body.replication_factor ?? 1,
        write_consistency_factor: body.write_consistency_factor ?? 1,
      },
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
          data_type: ix.type ?? 'keyword',
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
          ...c.layout,
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
    const type = typeof body.field_schema === 'string' ? body.field_schema : body.field_schema.type;
    c.indexes.set(body.field_name, params ? { params, type } : { type });
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
          checkSparse(value);
          point.sparse.set(vname, value);
        }
      }
      staged.push(point);
    }
    for (const p of staged) c.points.set(key(p.id), p);
    return this.ack(c);
  }

  delete(name: string, body: z.infer<typeof deleteSchema>) {
    const c = this.get(name);
    const doomed = 'filter' in body ? matching(c, body.filter).map((p) => p.id) : body.points;
    for (const id of doomed) c.points.delete(key(id));
    return this.ack(c);
  }

  /**
   * Qdrant merges the given keys into each point's payload; with `key` (a dotted path) into the
   * object found there, created when missing. The whole operation applies at once here.
   */
  setPayload(name: string, body: z.infer<typeof setPayloadSchema>) {
    const c = this.get(name);
    const targets =
      'filter' in body ? matching(c, body.filter) : body.points.flatMap((id) => c.points.get(key(id)) ?? []);
    for (const p of targets) {
      let into: Record<string, unknown> = p.payload;
      for (const part of body.key ? body.key.split('.') : []) {
        const next = into[part];
        if (next === null || typeof next !== 'object' || Array.isArray(next)) into[part] = {};
        into = into[part] as Record<string, unknown>;
      }
      Object.assign(into, structuredClone(body.payload));
    }
    return this.ack(c);
  }

  /**
   * Qdrant applies the operations one after the other and stops at the first that fails, answering
   * its error; those before it stay applied. One result per operation.
   */
  batch(name: string, body: z.infer<typeof batchSchema>) {
    return body.operations.map((op) => {
      if ('upsert' in op) return this.upsert(name, op.upsert);
      if ('delete' in op) return this.delete(name, op.delete);
      return this.setPayload(name, op.set_payload);
    });
  }

  /** Qdrant facets only keys with a keyword index; hits by count descending, then value. */
  facet(name: string, body: z.infer<typeof facetSchema>) {
    const c = this.get(name);
    if (c.indexes.get(body.key)?.type !== 'keyword') {
      throw new FakeHttpError(400, `Bad request: Index required but not found for "${body.key}"`);
    }
    const counts = new Map<string, number>();
    for (const p of matching(c, body.filter)) {
      let v: unknown = p.payload;
      for (const part of body.key.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
      for (const value of Array.isArray(v) ? v : [v]) {
        if (typeof value === 'string') counts.set(value, (counts.get(value) ?? 0) + 1);
      }
    }
    const hits = [...counts]
      .map(([value, count]) => ({ value, count }))
      .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
    return { hits: hits.slice(0, body.limit ?? 10) };
  }

  count(name: string, body: z.infer<typeof countSchema>) {
    return { count: matching(this.get(name), body.filter).length };
  }

  scroll(name: string, body: z.infer<typeof scrollSchema>) {
    const c = this.get(name);
    const all = matching(c, body.filter).sort((a, b) => compareIds(a.id, b.id));
    const offset = body.offset;
    const start =
      offset === undefined || offset === null ? 0 : all.findIndex((p) => compareIds(p.id, offset) >= 0);
    const limit = body.limit ?? 10;
    const from = start < 0 ? all.length : start;
    const page = all.slice(from, from + limit);
    const next = all[from + limit];
    return {
      points: page.map((p) =>
        body.with_payload === false
          ? { id: p.id }
          : { id: p.id, payload: project(p.payload, body.with_payload) },
      ),
      next_page_offset: next ? next.id : null,
    };
  }

  query(name: string, body: QueryBody) {
    const c = this.get(name);
    const hits = runQuery(c, body);
    return {
      points: hits.map((h) => ({
        id: h.point.id,
        version: h.point.version,
        // The server scores in f32 and writes the shortest decimal that reads back as that f32
        // (a live run: RRF 1/2 + 1/3 comes back as 0.8333334).
        score: f32(h.score),
        ...(body.with_payload ? { payload: h.point.payload } : {}),
      })),
    };
  }
}

/** `with_payload: {include: [paths]}` keeps only those dotted paths (Qdrant's payload selector). */
function project(payload: Record<string, unknown>, selector: unknown): Record<string, unknown> {
  if (!selector || typeof selector !== 'object' || !('include' in selector)) return payload;
  const out: Record<string, unknown> = {};
  for (const path of (selector as { include: string[] }).include) {
    const parts = path.split('.');
    let from: unknown = payload;
    for (const part of parts)
      from = from && typeof from === 'object' ? (from as Record<string, unknown>)[part] : undefined;
    if (from === undefined) continue;
    let to = out;
    for (const part of parts.slice(0, -1)) {
      to[part] ??= {};
      to = to[part] as Record<string, unknown>;
    }
    to[parts.at(-1)!] = from;
  }
  return out;
}

/** `x` as Qdrant writes an f32 score: the shortest decimal that rounds to the same single. */
function f32(x: number): number {
  const single = Math.fround(x);
  for (let digits = 1; digits < 17; digits++) {
    const shortest = Number(single.toPrecision(digits));
    if (Math.fround(shortest) === single) return shortest;
  }
  return single;
}
