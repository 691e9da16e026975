import { describe, expect, it } from 'vitest';
import type { SearchHit } from '../../src/index/contract.js';
import { sectionRepeatsDown, subsectionsFirst } from '../../src/retrieve/section-order.js';

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

describe('a section ranked by its best chunk', () => {
  const NATO = ['4.4 Forsvarspolitik', '4.4.3 Nyt fokus på territorialforsvar'];
  const COLD_WAR = ['1.11 Kold krig', '1.11.1 Dansk politik og den kolde krig'];

  it("lowers a section's further chunks by the factor for each one above them; the scores stay in rank order", () => {
    const ranked = [
      hit('nato 1', 6.0, NATO, 'ch4'),
      hit('nato 2', 6.0, NATO, 'ch4'),
      hit('nato 3', 5.9, NATO, 'ch4'),
      hit('cold war', 5.6, COLD_WAR),
      hit('cold war 2', 2.0, COLD_WAR),
    ];
    const out = sectionRepeatsDown(ranked, 0.5);
    // nato 2 counts 3.0, nato 3 1.475, cold war 2 1.0.
    expect(ids(out)).toEqual(['nato 1', 'cold war', 'nato 2', 'nato 3', 'cold war 2']);
    expect(out.map((h) => h.score)).toEqual([6.0, 6.0, 5.9, 5.6, 2.0]);
  });

  it("keeps a section's strong second chunk above another section's weak first one", () => {
    const ranked = [hit('a 1', 10, NATO, 'ch4'), hit('a 2', 9, NATO, 'ch4'), hit('b', 4, COLD_WAR)];
    expect(ids(sectionRepeatsDown(ranked, 0.5))).toEqual(['a 1', 'a 2', 'b']);
  });

  it('tells sections apart by document and breadcrumb; a document without headings is one section', () => {
    const ranked = [
      hit('doc 1', 8, [], 'd1'),
      hit('doc 1 again', 7, [], 'd1'),
      hit('same breadcrumb, other document', 6, NATO, 'd2'),
      hit('same document, other section', 5, COLD_WAR, 'd1'),
    ];
    expect(ids(sectionRepeatsDown(ranked, 0.5))).toEqual([
      'doc 1',
      'same breadcrumb, other document',
      'same document, other section',
      'doc 1 again',
    ]);
    expect(ids(sectionRepeatsDown(ranked, 1))).toEqual(ids(ranked));
  });
});
