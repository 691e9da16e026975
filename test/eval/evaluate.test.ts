import { describe, expect, it } from 'vitest';
import { compareRuns } from '../../src/eval/compare.js';
import { evaluate, rankUnits } from '../../src/eval/evaluate.js';
import type { EvalRun } from '../../src/eval/run.js';
import type { ChunkMeta } from '../../src/index/contract.js';
import { fileIdFor } from '../../src/index/identifiers.js';

const hit = (file_id: string, split_id = 0, collection_name = 'kb'): ChunkMeta => ({
  collection_name,
  collection_type: 'file',
  file_id,
  ingest_version: 'v',
  split_id,
});

describe('rankUnits: chunk hits pooled to what the qrels name', () => {
  it('documents rank where their best chunk does; file ids name them', () => {
    const hits = [hit('f1', 2), hit('f2', 0), hit('f1', 0), hit('f3', 1)];
    expect(rankUnits(hits, new Map([['f3', 1]]))).toEqual(['f1', 'f2', 'f3']);
  });

  it('a path given to kilde ingest (or a BEIR id) names the document its file id was derived from', () => {
    const hits = [hit(fileIdFor('kb', 'other.md')), hit(fileIdFor('kb', 'docs/a.md'), 3)];
    expect(rankUnits(hits, new Map([['docs/a.md', 1]]))).toEqual([fileIdFor('kb', 'other.md'), 'docs/a.md']);
  });

  it('qrels naming chunks (<file_id>#<split_id>) rank chunks', () => {
    const hits = [hit('f1', 2), hit('f1', 0), hit('f1', 2)];
    expect(rankUnits(hits, new Map([['f1#0', 1]]))).toEqual(['f1#2', 'f1#0']);
  });
});

describe('evaluate', () => {
  it('scores judged queries only, through the search function, in query order', async () => {
    const asked: { query: string; collections: readonly string[]; k: number }[] = [];
    const result = await evaluate({
      search: async (query, collections, k) => {
        asked.push({ query, collections, k });
        return query === 'good' ? [hit('d1'), hit('d2')] : [hit('d2'), hit('d9')];
      },
      queries: [
        { id: 'q1', text: 'good' },
        { id: 'q2', text: 'bad' },
        { id: 'q3', text: 'unjudged' },
      ],
      qrels: new Map([
        ['q1', new Map([['d1', 1]])],
        ['q2', new Map([['d1', 1]])],
        ['q3', new Map([['d1', 0]])],
        ['q4', new Map([['d1', 1]])],
      ]),
      collectionNames: ['kb'],
      k: 20,
    });
    expect(asked.map((a) => a.query).sort()).toEqual(['bad', 'good']);
    expect(asked[0]).toMatchObject({ collections: ['kb'], k: 20 });
    expect(result.queries).toBe(2);
    expect(result.skipped).toEqual({ unjudged: 1, missing: 1 });
    expect(result.per_query.map((r) => [r.query_id, r['ndcg@10'], r.retrieved])).toEqual([
      ['q1', 1, ['d1', 'd2']],
      ['q2', 0, ['d2', 'd9']],
    ]);
    expect(result.metrics['mrr@10']).toBe(0.5);
  });
});

function run(id: string, scores: number[]): EvalRun {
  const per_query = scores.map((s, i) => ({
    query_id: `q${i}`,
    'ndcg@10': s,
    'recall@10': s,
    'recall@100': 1,
    'mrr@10': s,
    relevant: 1,
    retrieved: [],
  }));
  return {
    id,
    created_at: '2025-01-01T00:00:00.000Z',
    kilde_version: '0',
    settings: {},
    collection_names: ['kb'],
    k: 100,
    queries: scores.length,
    skipped: { unjudged: 0, missing: 0 },
    metrics: { 'ndcg@10': 0, 'recall@10': 0, 'recall@100': 1, 'mrr@10': 0 },
    per_query,
  };
}

describe('compareRuns: the regression gate', () => {
  it('pairs queries by id, compares their means, fails past the allowed drop', () => {
    const a = run('a', [1, 1, 0.5, 0.5]);
    const b = run('b', [1, 0.5, 0.5, 0.5, 0.9]);
    const c = compareRuns(a, b, { metric: 'ndcg@10', maxDrop: 0.1 });
    expect(c).toMatchObject({ a: 'a', b: 'b', paired: 4, onlyA: 0, onlyB: 1 });
    const ndcg = c.rows.find((r) => r.metric === 'ndcg@10')!;
    expect(ndcg).toMatchObject({ a: 0.75, b: 0.625, delta: -0.125 });
    // One query of four changed: flipping its sign leaves |sum| unchanged, so every assignment is as extreme.
    expect(ndcg.p).toBe(1);
    expect(c.gate).toMatchObject({ drop: 0.125, failed: true });
    expect(compareRuns(a, b, { metric: 'ndcg@10', maxDrop: 0.125 }).gate.failed).toBe(false);
    expect(compareRuns(a, b, { metric: 'recall@100', maxDrop: 0 }).gate.failed).toBe(false);
  });

  it('with alpha, a drop fails only when it is significant', () => {
    const a = run('a', [1, 1, 0.5, 0.5]);
    const b = run('b', [1, 0.5, 0.5, 0.5]);
    expect(compareRuns(a, b, { metric: 'ndcg@10', maxDrop: 0.01, alpha: 0.05 }).gate.failed).toBe(false);
    const many = run(
      'm',
      Array.from({ length: 50 }, () => 0.8),
    );
    const worse = run(
      'w',
      Array.from({ length: 50 }, () => 0.6),
    );
    expect(compareRuns(many, worse, { metric: 'ndcg@10', maxDrop: 0.01, alpha: 0.05 }).gate.failed).toBe(
      true,
    );
  });
});
