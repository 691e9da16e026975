import { describe, expect, it } from 'vitest';
import type { SearchHit } from '../../src/index/contract.js';
import { type Found, mergeFound } from '../../src/retrieve/agentic.js';

const hit = (content: string, score: number): SearchHit => ({
  id: content,
  content,
  score,
  meta: {
    collection_name: 'kb',
    collection_type: 'knowledge',
    file_id: content,
    ingest_version: 'v',
    split_id: 0,
  },
});
const found = (source: Found['source'], call: number, ...hits: SearchHit[]): Found => ({
  source,
  call,
  query: `${source}-${call}`,
  hits,
});
const contents = (hits: SearchHit[]) => hits.map((h) => h.content);

describe('merging what an agentic run kept', () => {
  it('the accepted search and the seed share the places by rank, shown best score first', () => {
    // The seed's vague query scores higher on the path's scale than the agent's precise one.
    const seed = found('seed', 0, hit('s1', 0.9), hit('s2', 0.89), hit('s3', 0.88), hit('s4', 0.87));
    const agent = found('agent', 1, hit('a1', 0.8), hit('a2', 0.7), hit('a3', 0.6), hit('a4', 0.5));
    const merged = mergeFound([seed, agent], 4);
    expect(contents(merged)).toEqual(['s1', 's2', 'a1', 'a2']);
    expect(merged.map((h) => h.score)).toEqual([0.9, 0.89, 0.8, 0.7]);
  });

  it('searches the model rejected (it searched again) only fill what is left', () => {
    const rejected = found('agent', 1, hit('r1', 0.99), hit('r2', 0.98));
    const accepted = found('agent', 2, hit('a1', 0.7));
    expect(contents(mergeFound([rejected, accepted], 2))).toEqual(['r1', 'a1']);
    expect(contents(mergeFound([rejected, accepted], 1))).toEqual(['a1']);
  });

  it('the fallback (queries parsed from text) counts as the last search; each content once', () => {
    const agent = found('agent', 1, hit('x', 0.5));
    const fallback = found('fallback', 2, hit('x', 0.4), hit('f1', 0.3));
    const seed = found('seed', 0, hit('f1', 0.35), hit('s1', 0.2));
    expect(contents(mergeFound([agent, fallback, seed], 10))).toEqual(['x', 'f1', 's1']);
  });

  it('nothing kept, nothing answered', () => {
    expect(mergeFound([], 5)).toEqual([]);
  });
});
