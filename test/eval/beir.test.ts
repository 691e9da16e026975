import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentText, parseQrels, parseQueries, readCorpus } from '../../src/eval/beir.js';

describe('BEIR inputs', () => {
  it('queries: JSON Lines with _id and text; numeric ids read as text; blank lines skipped', () => {
    expect(parseQueries('{"_id": "q1", "text": "a"}\n\n{"_id": 2, "text": "b", "metadata": {}}\n')).toEqual([
      { id: 'q1', text: 'a' },
      { id: '2', text: 'b' },
    ]);
  });

  it('queries: malformed lines and repeated ids name their line', () => {
    expect(() => parseQueries('{"_id": "q1", "text": "a"}\n{oops', 'q.jsonl')).toThrow(
      'q.jsonl line 2: not JSON',
    );
    expect(() => parseQueries('{"_id": "q1"}')).toThrow(/queries line 1: text/);
    expect(() => parseQueries('{"_id": "q", "text": "a"}\n{"_id": "q", "text": "b"}')).toThrow(
      'queries line 2: query id "q" repeats',
    );
    expect(() => parseQueries('\n')).toThrow('queries: no queries');
  });

  it('qrels: TSV with or without a header, graded', () => {
    const withHeader = parseQrels('query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t0\n');
    expect(withHeader.get('q1')).toEqual(
      new Map([
        ['d1', 1],
        ['d2', 2],
      ]),
    );
    expect(withHeader.get('q2')).toEqual(new Map([['d3', 0]]));
    expect(parseQrels('q1\td1\t1')).toEqual(new Map([['q1', new Map([['d1', 1]])]]));
  });

  it('qrels: a bad line after the first is an error naming it', () => {
    expect(() => parseQrels('q1\td1\t1\nq2 d2 1\n', 'r.tsv')).toThrow(
      'r.tsv line 2: expected "query-id<TAB>corpus-id<TAB>score"',
    );
    expect(() => parseQrels('query-id\tcorpus-id\tscore\n')).toThrow('no judgements');
  });

  it('corpus: streamed line by line; a document becomes title, blank line, text', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kilde-beir-'));
    try {
      const path = join(dir, 'corpus.jsonl');
      await writeFile(path, '{"_id": "d1", "title": "T", "text": "body"}\n{"_id": 7, "text": "only text"}\n');
      const docs = [];
      for await (const d of readCorpus(path)) docs.push(d);
      expect(docs).toEqual([
        { id: 'd1', title: 'T', text: 'body' },
        { id: '7', title: '', text: 'only text' },
      ]);
      expect(docs.map(documentText)).toEqual(['T\n\nbody\n', 'only text\n']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
