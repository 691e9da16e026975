import type { ChunkMeta } from '../index/contract.js';
import { fileIdFor } from '../index/identifiers.js';
import type { EvalQuery, QrelsMap } from './beir.js';
import { type Judgements, type MetricValues, meanOf, scoreQuery } from './metrics.js';

/** One query through the real search path: the chunks it returns, best first. */
export type EvalSearch = (
  query: string,
  collectionNames: readonly string[],
  k: number,
) => Promise<readonly ChunkMeta[]>;

export interface EvalQueryRow extends MetricValues {
  query_id: string;
  /** Judged-relevant units of the query. */
  relevant: number;
  /** The first 10 units retrieved (documents or chunks, as the qrels name them). */
  retrieved: string[];
}

export interface EvalResult {
  collection_names: string[];
  /** Chunks fetched per query (pooled to documents afterwards). */
  k: number;
  /** Queries scored: those with at least one relevant judgement. */
  queries: number;
  skipped: {
    /** Queries given without any relevant judgement (BEIR scores only judged queries). */
    unjudged: number;
    /** Judged query ids with no query text. */
    missing: number;
  };
  metrics: MetricValues;
  per_query: EvalQueryRow[];
}

/** An id ending in `#<split_id>` names one chunk of a file (`<file_id>#<split_id>`). */
const CHUNK_ID = /#\d+$/;

/**
 * The ranked units of one query. Qrels naming chunks rank chunks; otherwise chunk hits pool to
 * documents: a document ranks where its best chunk does. A document is named by its `file_id`, or
 * by the path it was ingested under (`kilde ingest` and `kilde eval --dataset` derive the file id
 * from collection and path), so labels can use either.
 */
export function rankUnits(hits: readonly ChunkMeta[], judged: Judgements): string[] {
  const ids = [...judged.keys()];
  const chunkLevel = ids.length > 0 && ids.every((id) => CHUNK_ID.test(id));
  const alias = new Map<string, string>();
  if (!chunkLevel) {
    const collections = new Set(hits.map((h) => h.collection_name));
    for (const id of ids) {
      for (const c of collections) alias.set(fileIdFor(c, id), id);
      alias.set(id, id);
    }
  }
  const seen = new Set<string>();
  const ranked: string[] = [];
  for (const hit of hits) {
    const key = chunkLevel ? `${hit.file_id}#${hit.split_id}` : (alias.get(hit.file_id) ?? hit.file_id);
    if (seen.has(key)) continue;
    seen.add(key);
    ranked.push(key);
  }
  return ranked;
}

export interface EvaluateOptions {
  search: EvalSearch;
  queries: readonly EvalQuery[];
  qrels: QrelsMap;
  collectionNames: readonly string[];
  /** Chunks fetched per query; the search route's maximum (100) by default. */
  k?: number;
  /** Queries searched at once. Default 4. */
  concurrency?: number;
  signal?: AbortSignal;
}

/** Runs every judged query through `search` and scores it; per-query rows keep the queries' order. */
export async function evaluate(o: EvaluateOptions): Promise<EvalResult> {
  const k = o.k ?? 100;
  const judgedQueries = o.queries.filter((q) => [...(o.qrels.get(q.id)?.values() ?? [])].some((g) => g > 0));
  const given = new Set(o.queries.map((q) => q.id));
  const missing = [...o.qrels.keys()].filter((id) => !given.has(id)).length;
  const rows: EvalQueryRow[] = new Array(judgedQueries.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < judgedQueries.length; i = next++) {
      o.signal?.throwIfAborted();
      const q = judgedQueries[i]!;
      const judged = o.qrels.get(q.id)!;
      const ranked = rankUnits(await o.search(q.text, o.collectionNames, k), judged);
      rows[i] = {
        query_id: q.id,
        ...scoreQuery(ranked, judged),
        relevant: [...judged.values()].filter((g) => g > 0).length,
        retrieved: ranked.slice(0, 10),
      };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 4) }, worker));
  return {
    collection_names: [...o.collectionNames],
    k,
    queries: rows.length,
    skipped: { unjudged: o.queries.length - judgedQueries.length, missing },
    metrics: meanOf(rows),
    per_query: rows,
  };
}
