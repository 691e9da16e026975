import type { Logger } from 'pino';
import type { DenseEmbedder } from '../embed/dense.js';
import type { IndexFilter, SearchHit } from '../index/contract.js';
import { fuseRrf } from '../index/rrf.js';
import { hybridBranchLimit, type VectorIndex } from '../index/store.js';
import { hitAttributes, hitsSpan, inSpan } from '../telemetry/tracing.js';
import type { createCorpusCache } from './corpus-cache.js';
import {
  type ExtraFilter,
  type StageTimer,
  type TimedStage,
  type TracedHit,
  traceBranch,
  traceFused,
} from './explain.js';
import { dedupByContent } from './fuse.js';
import type { RetrieveMetrics } from './metrics.js';
import type { QueryLexicalSide } from './query-lexical.js';
import type { Reranker } from './rerank.js';
import { rerankScores, withLexicalScores } from './scores.js';
import { sectionRepeatsDown, subsectionsFirst } from './section-order.js';

const NO_LEXICAL = { terms: [], sparse: { indices: [], values: [] } };

/**
 * How close (a share of its BM25 score) a subsection must score to its section's introduction to
 * be ranked above it, in the lexical modes (section-order.ts); measured in docs/quality.md.
 */
export const SUBSECTION_RATIO = 0.8;

/**
 * How much less each further chunk of one section counts in the lexical modes (section-order.ts,
 * `sectionRepeatsDown`); measured in docs/quality.md.
 */
export const SECTION_REPEAT_FACTOR = 0.5;

/** The lexical modes' order after BM25: introductions below their subsections, then a section by its best chunk. */
export function lexicalOrder<T extends SearchHit>(hits: readonly T[]): T[] {
  return sectionRepeatsDown(subsectionsFirst(hits, SUBSECTION_RATIO), SECTION_REPEAT_FACTOR);
}

/** Which search runs, decided once per request from the configuration and the collection. */
export type SearchMode = 'dense' | 'hybrid' | 'dense+client-bm25' | 'lexical' | 'client-bm25';

export interface PipelineDeps {
  index: VectorIndex;
  dense?: DenseEmbedder | undefined;
  /** The query's lexical side (terms, BM25 vector) in the languages of the collections searched. */
  lexical: QueryLexicalSide;
  hybrid: boolean;
  reranker?: Reranker | undefined;
  multiplier: number;
  corpus: ReturnType<typeof createCorpusCache>;
  metrics: RetrieveMetrics;
  log: Logger;
}

/**
 * `lexicalInIndex`: the collection has `text-sparse` (Qdrant) or a full-text index (LanceDB), as
 * described now (see collection-state.ts), not as configured.
 */
export function searchMode(d: Pick<PipelineDeps, 'dense' | 'hybrid'>, lexicalInIndex: boolean): SearchMode {
  if (!d.dense) return lexicalInIndex ? 'lexical' : 'client-bm25';
  if (!d.hybrid) return 'dense';
  return lexicalInIndex ? 'hybrid' : 'dense+client-bm25';
}

/** What one search may add: the request's filter, explanations, and a timer for its stages. */
export interface SearchOptions {
  /** AND-ed with the tenant filter, inside the index query. */
  filter?: ExtraFilter | undefined;
  /** Trace every hit (explain.ts). */
  explain?: boolean | undefined;
  timer?: StageTimer | undefined;
}

/**
 * The linear pipeline for one query: embed → search (filtered to the caller's collections and the
 * request's filter) → dedup by content MD5 → optional rerank → top k. Higher scores are always better.
 */
export function searchOne(
  d: PipelineDeps,
  mode: SearchMode,
  query: string,
  collectionNames: string[],
  k: number,
  o: SearchOptions = {},
): Promise<{ mode: SearchMode; hits: TracedHit[] }> {
  // One span per query (a request may search several at once), its stages as children; the query
  // text stays out of it (src/telemetry/tracing.ts).
  const attributes = { 'kilde.search.mode': mode, 'kilde.collections': collectionNames, 'kilde.search.k': k };
  return inSpan('kilde.search', attributes, async (span) => {
    const result = await searchStages(d, mode, query, collectionNames, k, o);
    span?.setAttributes(hitAttributes(result.hits));
    return result;
  });
}

async function searchStages(
  d: PipelineDeps,
  mode: SearchMode,
  query: string,
  collectionNames: string[],
  k: number,
  o: SearchOptions,
): Promise<{ mode: SearchMode; hits: TracedHit[] }> {
  const extra = o.filter ?? {};
  const filter: IndexFilter = { ...extra, collectionNames };
  const explain = o.explain === true;
  const timed = <T>(stage: TimedStage, fn: () => Promise<T>) => (o.timer ? o.timer.time(stage, fn) : fn());
  const pool = d.reranker ? k * d.multiplier : k;
  // Over-fetch a little so dedup by content still leaves k hits.
  const fetchN = Math.min(pool * 2, 1000);

  let vector: number[] | undefined;
  if (d.dense) {
    const dense = d.dense;
    vector = await d.metrics.time('embed', () =>
      timed('embed', () => inSpan('kilde.search.embed', {}, () => dense.embedQuery(query))),
    );
  }
  // Dense search alone needs no lexical side (and so no look-up of the collections' languages).
  const { terms, sparse } =
    mode === 'dense'
      ? NO_LEXICAL
      : await inSpan('kilde.search.analyse', {}, async (span) => {
          const side = await d.lexical.analyse(query, collectionNames);
          span?.setAttribute('kilde.search.terms.count', side.terms.length);
          return side;
        });
  const lexicalSpan = (n: number, where: 'index' | 'client', fn: () => Promise<SearchHit[]>) =>
    hitsSpan('kilde.search.lexical', { 'kilde.search.limit': n, 'kilde.lexical.where': where }, fn);
  const dense = (n: number) =>
    hitsSpan('kilde.search.dense', { 'kilde.search.limit': n }, () =>
      d.index.searchDense(vector!, filter, n),
    );
  const branch = (hits: SearchHit[], path: 'dense' | 'lexical'): TracedHit[] =>
    explain ? traceBranch(hits, path) : hits;

  const hits: TracedHit[] = await d.metrics.time('search', () =>
    timed('search', async () => {
      switch (mode) {
        case 'dense':
          return branch(await dense(fetchN), 'dense');
        case 'hybrid': {
          const q = { dense: vector!, sparse, text: query, terms };
          // Both branches and their fusion run in the index, in one call: one span.
          const hybrid = () =>
            hitsSpan(
              'kilde.search.hybrid',
              { 'kilde.search.limit': fetchN, 'kilde.fusion.where': 'index' },
              () => d.index.searchHybrid(q, filter, fetchN),
            );
          if (!explain) return hybrid();
          // The engine answers only the fused list: its branches are read again, with the limit
          // the engine gives each of them, for their ranks and raw scores.
          const n = hybridBranchLimit(fetchN);
          const [fused, denseHits, lexicalHits] = await Promise.all([
            hybrid(),
            dense(n),
            lexicalSpan(n, 'index', () => d.index.searchLexical(q, filter, n)),
          ]);
          return traceFused(fused, denseHits, lexicalHits);
        }
        case 'lexical':
          return withLexicalScores(
            lexicalOrder(
              branch(
                await lexicalSpan(fetchN, 'index', () =>
                  d.index.searchLexical({ sparse, text: query, terms }, filter, fetchN),
                ),
                'lexical',
              ),
            ),
          );
        case 'client-bm25': {
          const hits = await lexicalSpan(fetchN, 'client', async () => {
            const { corpus } = await d.corpus.get(collectionNames, extra);
            return corpus.search(terms, fetchN);
          });
          return withLexicalScores(lexicalOrder(branch(hits, 'lexical')));
        }
        case 'dense+client-bm25': {
          const [denseHits, lexicalHits] = await Promise.all([
            dense(fetchN),
            lexicalSpan(fetchN, 'client', async () => {
              const { corpus } = await d.corpus.get(collectionNames, extra);
              return corpus.search(terms, fetchN);
            }),
          ]);
          const fused = await d.metrics.time('fuse', () =>
            hitsSpan(
              'kilde.search.fusion',
              { 'kilde.fusion.method': 'rrf', 'kilde.fusion.where': 'client' },
              () => fuseRrf([denseHits, lexicalHits], fetchN),
            ),
          );
          return explain ? traceFused(fused, denseHits, lexicalHits) : fused;
        }
      }
    }),
  );

  const candidates = dedupByContent(hits, pool);
  if (!d.reranker || candidates.length === 0) return { mode, hits: candidates.slice(0, k) };
  const reranker = d.reranker;
  try {
    const scores = await d.metrics.time('rerank', () =>
      timed('rerank', () =>
        inSpan('kilde.search.rerank', { 'kilde.rerank.candidates': candidates.length }, async (span) => {
          const ranked = await reranker.rerank(
            query,
            candidates.map((c) => c.content),
            Math.min(k, candidates.length),
          );
          // The ids and raw reranker scores, best first.
          span?.setAttributes(
            hitAttributes(ranked.map((r) => ({ id: candidates[r.index]!.id, score: r.score }))),
          );
          return ranked;
        }),
      ),
    );
    const top = scores.slice(0, k);
    const bounded = rerankScores(top.map((s) => s.score));
    const reranked = top.map((s, i): TracedHit => {
      const c = candidates[s.index]!;
      const hit: TracedHit = { ...c, score: bounded[i]! };
      if (c.trace) hit.trace = { ...c.trace, path: 'rerank', rerank: s.score };
      return hit;
    });
    return { mode, hits: reranked };
  } catch (err) {
    d.metrics.fallback('rerank');
    d.log.warn(
      { reason: err instanceof Error ? err.message : String(err) },
      'rerank failed; returning unranked candidates',
    );
    return { mode, hits: candidates.slice(0, k) };
  }
}
