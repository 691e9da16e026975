import { describe, expect, it } from 'vitest';
import type { SearchHit } from '../../src/index/contract.js';
import { subsectionsFirst } from '../../src/retrieve/section-order.js';

const hit = (id: string, score: number, headers: string[], file = 'ch1'): SearchHit => ({
  id,
  content: id,
  score,
  meta: {
    collection_name: 'kb',
    collection_type: 'user',
    file_id: file,
    ingest_version: 'v1',
    split_id: 0,
    headers,
  },
});

const ids = (hits: SearchHit[]) => hits.map((h) => h.id);
const CHAPTER = ['1.3 Middelalder'];
const SECTION = ['1.3 Middelalder', '1.3.1 Magtkamp mellem konge, adel og kirke'];

describe('a section introduction ranked against its own subsections', () => {
  it('goes below the first of its subsections that scores close to it; the scores stay in rank order', () => {
    const ranked = [
      hit('intro', 20, CHAPTER),
      hit('other', 18, ['5.2 Litteratur'], 'ch5'),
      hit('sub', 17, SECTION),
      hit('sub2', 10, SECTION),
    ];
    const out = subsectionsFirst(ranked, 0.8);
    expect(ids(out)).toEqual(['other', 'sub', 'intro', 'sub2']);
    expect(out.map((h) => h.score)).toEqual([20, 18, 17, 10]);
  });

  it('stays above a subsection that scores well below it, and above sections it does not contain', () => {
    const ranked = [
      hit('intro', 20, CHAPTER),
      hit('sub', 15, SECTION),
      hit('sibling chapter', 19, ['1.4 Reformation', '1.4.1 Reformationen']),
      hit('other document', 19, SECTION, 'ch9'),
    ];
    expect(ids(subsectionsFirst(ranked, 0.8))).toEqual(ids(ranked));
  });

  it('moves past nested subsections one level at a time, and leaves hits without a breadcrumb alone', () => {
    const ranked = [
      hit('chapter', 20, CHAPTER),
      hit('section', 19, SECTION),
      hit('subsection', 18, [...SECTION, 'Kirken']),
      hit('plain', 17, []),
    ];
    expect(ids(subsectionsFirst(ranked, 0.8))).toEqual(['subsection', 'section', 'chapter', 'plain']);
  });
});
