import { type FakeSparse, type QueryBody, sparseSchema } from './bodies.js';
import { filterMatches } from './filter.js';
import {
  type Collection,
  checkSparse,
  compareIds,
  cosine,
  FakeHttpError,
  key,
  type Scored,
  type StoredPoint,
} from './model.js';

/**
 * Query API semantics: nearest by cosine (dense), sparse dot product (times BM25 IDF with the `idf`
 * modifier), and fusion of prefetches by RRF with Qdrant's formula 1 / (rank + k), k = 2 by default.
 */
export function matching(c: Collection, filter: unknown): StoredPoint[] {
  return [...c.points.values()].filter((p) => filterMatches(filter, p.payload));
}

function top(hits: Scored[], limit: number): Scored[] {
  return hits.sort((a, b) => b.score - a.score || compareIds(a.point.id, b.point.id)).slice(0, limit);
}

function notExisting(name: string): FakeHttpError {
  return new FakeHttpError(400, `Wrong input: Not existing vector name error: ${name}`);
}

export function runQuery(c: Collection, q: QueryBody): Scored[] {
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
      runQuery(c, pf).forEach((h, rank) => {
        const prev = fused.get(key(h.point.id));
        // In f32, as the server sums (1/2 + 1/3 is 0.8333334 there, not 0.8333333).
        const score = Math.fround((prev?.score ?? 0) + Math.fround(1 / (rank + k)));
        fused.set(key(h.point.id), { point: h.point, score });
      });
    }
    return top(
      [...fused.values()].filter((h) => filterMatches(q.filter, h.point.payload)),
      limit,
    );
  }
  if (prefetches.length > 0) throw new FakeHttpError(501, 'fake: only fusion queries over prefetches');
  if (query === undefined || query === null) throw new FakeHttpError(501, 'fake: query without a vector');
  const using = q.using ?? '';
  const candidates = matching(c, q.filter);
  if (Array.isArray(query)) {
    const spec = c.dense.get(using);
    if (!spec) throw notExisting(using);
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
    return top(scored, limit);
  }
  const sparseQuery = sparseSchema.parse(query);
  const spec = c.sparse.get(using);
  if (!spec) throw notExisting(using);
  checkSparse(sparseQuery);
  return top(sparseScores(c, using, spec.modifier, sparseQuery, candidates), limit);
}

/** Dot product over shared indices; with the IDF modifier each term is scaled by BM25's IDF. */
function sparseScores(
  c: Collection,
  using: string,
  modifier: string,
  q: FakeSparse,
  candidates: StoredPoint[],
): Scored[] {
  const withVector = [...c.points.values()].filter((p) => p.sparse.has(using));
  const idf = (index: number) => {
    const n = withVector.filter((p) => p.sparse.get(using)?.indices.includes(index)).length;
    return Math.log(1 + (withVector.length - n + 0.5) / (n + 0.5));
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
