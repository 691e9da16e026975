import type { Schemas } from '@qdrant/js-client-rest';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  DENSE_VECTOR,
  type IndexFilter,
  normaliseCosine,
  type SearchHit,
  SPARSE_VECTOR,
  type StoredPoint,
} from './contract.js';
import type { IndexSettings } from './open.js';
import {
  checkCompatibility,
  collectionInfoSchema,
  createCollectionBody,
  describeInfo,
  missingPayloadIndexes,
  type QdrantCollectionInfo,
} from './qdrant-collection.js';
import { anyOf, matchesNothing, toQdrantFilter } from './qdrant-filter.js';
import { createQdrantHttp, type QdrantCall } from './qdrant-http.js';
import { qdrantOrdered } from './qdrant-ordered.js';
import {
  checkDense,
  countResult,
  parseCursor,
  queryResult,
  scrollResult,
  sparseInput,
  toPointStruct,
  toStored,
  updateResult,
} from './qdrant-points.js';
import { resolveSourcePrefix as resolveSourcePrefixBy, sourcePage } from './qdrant-source-prefix.js';
import { RESERVED_TENANT_VALUES } from './reserved.js';
import {
  type CollectionInfo,
  filterList,
  type HybridQuery,
  hybridBranchLimit,
  type ScrollPage,
  type VectorIndex,
} from './store.js';

export interface QdrantDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** Points per upsert request (default 128: ~1.3 MB at 1024 dims, far under Qdrant's 32 MB cap). */
  upsertBatchSize?: number;
}

const anyResult = z.unknown();
const facetResult = z.object({
  hits: z.array(z.object({ value: z.union([z.string(), z.number(), z.boolean()]), count: z.number() })),
});

/** Qdrant's RRF constant when the query names none (`{fusion: 'rrf'}`). */
const QDRANT_RRF_K = 2;

export function createQdrantIndex(settings: IndexSettings, deps: QdrantDeps): VectorIndex {
  const log = deps.log.child({ index: 'qdrant', collection: settings.collection });
  const http = createQdrantHttp({
    baseUrl: settings.uri,
    apiKey: settings.apiKey,
    timeoutMs: settings.timeoutMs,
    fetch: deps.fetch ?? fetch,
    log,
  });
  const base = `/collections/${encodeURIComponent(settings.collection)}`;
  const batchSize = deps.upsertBatchSize ?? 128;
  const cluster = settings.cluster ?? {};
  const wants = {
    collection: settings.collection,
    denseDim: settings.denseDim,
    sparse: settings.sparse,
    shardNumber: cluster.shardNumber,
    replicationFactor: cluster.replicationFactor,
    writeConsistencyFactor: cluster.writeConsistencyFactor,
  };
  // Reads name their consistency when configured (docs/scaling.md, read-your-writes).
  const read = (path: string, body: unknown): QdrantCall =>
    cluster.readConsistency === undefined
      ? { method: 'POST', path, body }
      : { method: 'POST', path, query: { consistency: cluster.readConsistency }, body };
  let sparseKnown: boolean | undefined;

  const getInfo = (signal?: AbortSignal) =>
    http.callOrNotFound({ method: 'GET', path: base, signal }, collectionInfoSchema);

  const resolveSourcePrefix = (filter: IndexFilter) =>
    resolveSourcePrefixBy(filter, (body) => http.call(read(`${base}/points/scroll`, body), sourcePage));

  function stored(id: string | number, payload: unknown): StoredPoint | undefined {
    const r = toStored(id, payload);
    if ('point' in r) return r.point;
    log.warn({ id, issue: r.issue }, 'skipping a point without {content, meta}');
    return undefined;
  }

  async function query(body: Schemas['QueryRequest'], normalise: boolean): Promise<SearchHit[]> {
    const res = await http.call(read(`${base}/points/query`, body), queryResult);
    const hits: SearchHit[] = [];
    for (const p of res.points) {
      const point = stored(p.id, p.payload);
      if (point) hits.push({ ...point, score: normalise ? normaliseCosine(p.score) : p.score });
    }
    return hits;
  }

  async function countMatching(f: Schemas['Filter'] | undefined): Promise<number> {
    const body: Schemas['CountRequest'] = { exact: true };
    if (f) body.filter = f;
    const res = await http.call(read(`${base}/points/count`, body), countResult);
    return res.count;
  }

  async function count(given: IndexFilter | readonly IndexFilter[]): Promise<number> {
    const filters = (await Promise.all(filterList(given).map(resolveSourcePrefix))).filter(
      (f) => !matchesNothing(f),
    );
    if (filters.length === 0) return 0;
    const parts = filters.map(toQdrantFilter);
    if (parts.some((f) => f === undefined)) return countMatching(undefined);
    return countMatching(parts.length === 1 ? parts[0] : { should: parts as Schemas['Filter'][] });
  }

  async function searchLexical(q: HybridQuery, given: IndexFilter, limit: number) {
    if (!q.sparse) throw new Error('Qdrant lexical search needs a sparse (BM25) query vector');
    const filter = await resolveSourcePrefix(given);
    // A query of stop words only has no terms; Qdrant would match nothing either.
    if (matchesNothing(filter) || q.sparse.indices.length === 0) return [];
    const body: Schemas['QueryRequest'] = {
      query: sparseInput(q.sparse),
      using: SPARSE_VECTOR,
      limit,
      with_payload: true,
    };
    const f = toQdrantFilter(filter);
    if (f) body.filter = f;
    return query(body, false);
  }

  // Writes wait until applied, so a search right after sees them (and errors surface here); with
  // QDRANT_WRITE_ORDERING they also name their ordering (docs/scaling.md).
  const writeQuery: Record<string, string> =
    cluster.writeOrdering === undefined
      ? { wait: 'true' }
      : { wait: 'true', ordering: cluster.writeOrdering };
  const write = (method: 'PUT' | 'POST', path: string, body: unknown): QdrantCall => ({
    method,
    path,
    query: writeQuery,
    body,
  });

  return {
    engine: 'qdrant',

    async ensureCollection() {
      let info: QdrantCollectionInfo | undefined = await getInfo();
      if (!info) {
        const body = createCollectionBody(wants);
        try {
          await http.call({ method: 'PUT', path: base, body }, anyResult);
          log.info({ body }, 'created qdrant collection');
        } catch (err) {
          // Another process may have created it between our GET and PUT; only that is fine.
          info = await getInfo();
          if (!info) throw err;
        }
        info ??= await getInfo();
        if (!info) throw new Error(`Qdrant collection "${settings.collection}" vanished after creation`);
      }
      const { errors, warnings } = checkCompatibility(wants, info);
      for (const w of warnings) log.warn(w);
      if (errors.length > 0) throw new Error(errors.join('; '));
      const { missing, wrongType } = missingPayloadIndexes(info);
      if (wrongType.length > 0) {
        log.warn({ fields: wrongType }, 'payload fields indexed with a type other than keyword');
      }
      for (const body of missing) {
        await http.call(write('PUT', `${base}/index`, body), updateResult);
      }
      sparseKnown = describeInfo(info).hasSparse;
      if (settings.sparse === false && sparseKnown) {
        log.info('collection has text-sparse but sparse embeddings are off: new points get none');
      }
    },

    async describe(): Promise<CollectionInfo> {
      const info = await getInfo();
      if (!info) return { exists: false, hasSparse: false, vectorNames: [] };
      const d = describeInfo(info);
      sparseKnown = d.hasSparse;
      return d;
    },

    hasSparse: () => sparseKnown ?? settings.sparse,

    // Requests of `batchSize` points, each applied on its own: `withEach` rides along with every one.
    atomicUpsert: false,

    ordered: qdrantOrdered({ http, base, denseDim: settings.denseDim, write }),

    async upsert(points, options = {}) {
      const all = points.map((p) => toPointStruct(p, settings.denseDim));
      const each = options.withEach;
      for (let i = 0; i < all.length || (i === 0 && each); i += batchSize) {
        options.signal?.throwIfAborted();
        const part = all.slice(i, i + batchSize);
        const body: Schemas['PointsList'] = {
          points: each ? [...part, toPointStruct(each(), settings.denseDim)] : part,
        };
        await http.call(write('PUT', `${base}/points`, body), updateResult);
      }
    },

    async deleteWhere(filter, options = {}) {
      const f = anyOf(filterList(filter), 'refusing to delete every point: deleteWhere needs a filter');
      if (!f) return 0;
      // Qdrant's delete answers no count; counting first is exact unless a writer races us. Not
      // counted (`counted: false`, a version's retirement), the delete goes alone: one request.
      const n = options.counted === false ? 0 : await countMatching(f);
      if (n === 0 && options.counted !== false) return 0;
      const body: Schemas['FilterSelector'] = { filter: f };
      await http.call(write('POST', `${base}/points/delete`, body), updateResult);
      return n;
    },

    count,

    async moveTo(filter, collectionName, options = {}) {
      const f = anyOf(filterList(filter), 'refusing to move every point: moveTo needs a filter');
      if (!f) return 0;
      // `set_payload` answers no count: one request more, unless the caller counts afterwards.
      const n = options.counted === false ? 0 : await countMatching(f);
      if (n === 0 && options.counted !== false) return 0;
      // `key: 'meta'` merges into the meta object: only collection_name changes.
      const body: Schemas['SetPayload'] = {
        payload: { collection_name: collectionName },
        key: 'meta',
        filter: f,
      };
      await http.call(write('POST', `${base}/points/payload`, body), updateResult);
      return n;
    },

    async tenants(limit) {
      // Facets count points per value of the (keyword-indexed) tenant key in one request.
      const body: Schemas['FacetRequest'] = {
        key: 'meta.collection_name',
        limit: limit + RESERVED_TENANT_VALUES.length,
        exact: true,
        filter: { must_not: [{ key: 'meta.collection_name', match: { any: [...RESERVED_TENANT_VALUES] } }] },
      };
      const res = await http.call(read(`${base}/facet`, body), facetResult);
      return res.hits
        .filter((h): h is { value: string; count: number } => typeof h.value === 'string')
        .filter((h) => !RESERVED_TENANT_VALUES.includes(h.value))
        .map((h) => ({ name: h.value, chunks: h.count }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .slice(0, limit);
    },

    async scroll(given, options): Promise<ScrollPage> {
      const filter = await resolveSourcePrefix(given);
      if (matchesNothing(filter)) return { points: [] };
      // Qdrant pages by point id; ordering by payload would disable offset paging.
      const body: Schemas['ScrollRequest'] = {
        limit: options.limit,
        with_payload: options.metaOnly ? { include: ['meta'] } : true,
        with_vector: false,
      };
      const f = toQdrantFilter(filter);
      if (f) body.filter = f;
      if (options.cursor !== undefined) body.offset = parseCursor(options.cursor);
      const res = await http.call(read(`${base}/points/scroll`, body), scrollResult);
      const page: ScrollPage = { points: [] };
      for (const r of res.points) {
        const point = stored(r.id, r.payload);
        if (point) page.points.push(point);
      }
      if (res.next_page_offset !== undefined && res.next_page_offset !== null) {
        page.next = String(res.next_page_offset);
      }
      return page;
    },

    async searchDense(vector, given, limit) {
      checkDense(vector, settings.denseDim, 'the query vector');
      const filter = await resolveSourcePrefix(given);
      if (matchesNothing(filter)) return [];
      const body: Schemas['QueryRequest'] = {
        query: vector,
        using: DENSE_VECTOR,
        limit,
        with_payload: true,
      };
      const f = toQdrantFilter(filter);
      if (f) body.filter = f;
      return query(body, true);
    },

    searchLexical,

    async searchHybrid(q, given, limit) {
      if (!q.dense) return searchLexical(q, given, limit);
      checkDense(q.dense, settings.denseDim, 'the query vector');
      const filter = await resolveSourcePrefix(given);
      if (matchesNothing(filter)) return [];
      const f = toQdrantFilter(filter);
      const prefetch = (input: Schemas['VectorInput'], using: string): Schemas['Prefetch'] =>
        f
          ? { query: input, using, filter: f, limit: hybridBranchLimit(limit) }
          : { query: input, using, limit: hybridBranchLimit(limit) };
      const prefetches = [prefetch(q.dense, DENSE_VECTOR)];
      if (q.sparse && q.sparse.indices.length > 0) {
        prefetches.push(prefetch(sparseInput(q.sparse), SPARSE_VECTOR));
      }
      // One call: Qdrant runs both prefetches and fuses them. Its RRF gives 1 / (position + 2) per
      // list (0-based position, k = 2 by default in every version), so the largest sum is
      // prefetches / 2: dividing by it puts the scores in [0, 1] without changing the order.
      const hits = await query(
        { prefetch: prefetches, query: { fusion: 'rrf' }, limit, with_payload: true },
        false,
      );
      const scale = QDRANT_RRF_K / prefetches.length;
      return hits.map((h) => ({ ...h, score: Math.min(1, h.score * scale) }));
    },

    async ping(signal) {
      const info = await getInfo(signal);
      if (!info) throw new Error(`Qdrant collection "${settings.collection}" does not exist`);
    },

    async close() {
      // Nothing pooled here: connections belong to the injected fetch.
    },
  };
}
