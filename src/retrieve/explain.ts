import type { IndexFilter, SearchHit } from '../index/contract.js';

/**
 * Per-hit explanations and stage timings of `POST /search` with `explain: true` (docs/api.md,
 * "Explanations"). Off by default: without it nothing here runs and the answer is the reference one.
 */

/** How a hit reached the answer. */
export type ExplainPath = 'dense' | 'lexical' | 'hybrid' | 'rerank' | 'fallback' | 'agentic';

/** A hit's place in one branch: its 1-based rank and the engine's raw score there. */
export interface BranchRank {
  rank: number;
  score: number;
}

/** What `explain` answers per hit (snake_case on the wire; `score` is the returned score). */
export interface Explanation {
  path: ExplainPath;
  /** The dense branch: normalised cosine (cos + 1) / 2, as the index scores it. */
  dense: BranchRank | null;
  /** The lexical branch: the raw BM25 score (before the [0, 1] mapping of scores.ts). */
  lexical: BranchRank | null;
  /** The fused score: RRF divided by its maximum (hybrid), or the RRF of MERGE_QUERY_RESULTS. */
  fused: number | null;
  /** The reranker's raw score, before any mapping into [0, 1]. */
  rerank: number | null;
  score: number;
}

/** The trace a hit carries through the pipeline while explaining (everything but the final score). */
export type HitTrace = Omit<Explanation, 'score'>;

/** A search hit with its trace (only set while explaining). */
export interface TracedHit extends SearchHit {
  trace?: HitTrace;
}

/** Milliseconds spent per stage, summed over the request's queries (which run concurrently). */
export interface Timings {
  total: number;
  queries?: number;
  embed?: number;
  search?: number;
  rerank?: number;
  agent?: number;
}

export type TimedStage = Exclude<keyof Timings, 'total'>;

/** Collects the timings of one request on the injected clock. */
export class StageTimer {
  readonly started: number;
  private readonly spent: Partial<Record<TimedStage, number>> = {};

  constructor(private readonly now: () => number) {
    this.started = now();
  }

  async time<T>(stage: TimedStage, fn: () => Promise<T>): Promise<T> {
    const start = this.now();
    try {
      return await fn();
    } finally {
      this.spent[stage] = (this.spent[stage] ?? 0) + Math.max(0, this.now() - start);
    }
  }

  result(): Timings {
    return { total: Math.max(0, this.now() - this.started), ...this.spent };
  }
}

/** What a request's search may add to the tenant filter (`filter` of POST /search). */
export type ExtraFilter = Pick<
  IndexFilter,
  'fileIds' | 'languages' | 'collectionTypes' | 'sourcePrefix' | 'createdAfter' | 'createdBefore'
>;

const NO_TRACE: HitTrace = { path: 'dense', dense: null, lexical: null, fused: null, rerank: null };

/** Hits of one branch, each traced with its rank and raw score there. */
export function traceBranch(hits: readonly SearchHit[], path: 'dense' | 'lexical'): TracedHit[] {
  return hits.map((h, i) => ({
    ...h,
    trace: { ...NO_TRACE, path, [path]: { rank: i + 1, score: h.score } },
  }));
}

/**
 * Fused hits traced with the rank and raw score each branch gave them (absent from a branch: null),
 * and the fused score the hit carries.
 */
export function traceFused(
  fused: readonly SearchHit[],
  dense: readonly SearchHit[],
  lexical: readonly SearchHit[],
): TracedHit[] {
  const rankIn = (list: readonly SearchHit[]) => {
    const at = new Map<string, BranchRank>();
    list.forEach((h, i) => {
      if (!at.has(h.id)) at.set(h.id, { rank: i + 1, score: h.score });
    });
    return at;
  };
  const d = rankIn(dense);
  const l = rankIn(lexical);
  return fused.map((h) => ({
    ...h,
    trace: {
      path: 'hybrid',
      dense: d.get(h.id) ?? null,
      lexical: l.get(h.id) ?? null,
      fused: h.score,
      rerank: null,
    },
  }));
}

/** The explanation of a returned hit: its trace, with the score it was returned with. */
export function explanationOf(hit: TracedHit): Explanation {
  return { ...(hit.trace ?? NO_TRACE), score: hit.score };
}
