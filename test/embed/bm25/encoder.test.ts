import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Bm25Encoder, bm25TokenId } from '../../../src/embed/bm25/encoder.js';
import { BM25_STOPWORDS } from '../../../src/embed/bm25/stopwords.js';
import { createSparseEncoder } from '../../../src/embed/create-sparse.js';
import type { SparseVector } from '../../../src/index/contract.js';
import { STOPWORDS } from '../../fixtures/index.js';

const asMap = (v: SparseVector): Map<number, number> => new Map(v.indices.map((id, i) => [id, v.values[i]!]));

// Token ids: abs(MurmurHash3_x86_32(stem)), checked against an independent implementation.
const CAT = 1751422759;
const RUN = 243905464;
const RETRIEV = 1839534477;

// Weights worked out by hand with k = 1.2, b = 0.75, avg_len = 256 (doubles from CPython):
// tf·2.2 / (tf + 1.2·(0.25 + 0.75·doc_len/256)).
const TF2_LEN4 = 1.9014179608372723;
const TF3_LEN4 = 1.9915134370579917;
const TF1_LEN4 = 1.6741973840665876;
const TF1_LEN6 = 1.6652868125369606;

describe('BM25 encoder (fastembed Qdrant/bm25)', () => {
  const english = createSparseEncoder('Qdrant/bm25', 'english');
  const danish = createSparseEncoder('Qdrant/bm25', 'danish');

  it('weights document terms by saturated term frequency over the filtered length', () => {
    // the, are: stop words; cats/cat -> cat, running/runs -> run: doc_len 4, tf 2 each.
    const [v] = english.encodeDocuments(['The cats are running; the cat runs!']);
    expect(v).toEqual({ indices: [CAT, RUN], values: [TF2_LEN4, TF2_LEN4] });
  });

  it('counts repeated stems and leaves stop words out of the length', () => {
    const [v] = english.encodeDocuments(['Retrieval, retrieval and more retrieval of cats']);
    expect(v).toEqual({ indices: [RETRIEV, CAT], values: [TF3_LEN4, TF1_LEN4] });
  });

  it('encodes Danish with the Danish stop words and stemmer', () => {
    // til, de: stop words; københavn, kommun, byg, nye, bol, stud: doc_len 6.
    const [v] = danish.encodeDocuments(['Københavns kommune bygger nye boliger til de studerende.']);
    expect(v).toEqual({
      indices: [1027700163, 1945008880, 631132054, 759298896, 449005496, 1563445510],
      values: Array(6).fill(TF1_LEN6),
    });
  });

  it('gives each unique query term weight 1 and leaves IDF to Qdrant', () => {
    expect(english.encodeQuery('Cats running with cats')).toEqual({ indices: [CAT, RUN], values: [1, 1] });
  });

  it('returns empty vectors when nothing survives the filters', () => {
    const empty = { indices: [], values: [] };
    expect(english.encodeQuery('The, and of!')).toEqual(empty);
    expect(english.encodeDocuments(['', '...'])).toEqual([empty, empty]);
  });

  it('encodes a batch in order', () => {
    const out = english.encodeDocuments(['cat', 'run run', 'cat']);
    expect(out.map((v) => v.indices)).toEqual([[CAT], [RUN], [CAT]]);
  });

  it('drops the "_" token and tokens over 40 code points', () => {
    const encoder = new Bm25Encoder({ language: 'english' });
    const forty = 'x'.repeat(40);
    const astral40 = '𝐀'.repeat(40);
    expect(encoder.terms(`_ __ ${forty} ${'x'.repeat(41)} ${astral40} ${'𝐀'.repeat(41)}`)).toEqual([
      '__',
      forty,
      astral40,
    ]);
  });

  it('merges two stems whose hashes differ only in sign; the later term sets the weight', () => {
    // abs(hash('q4144')) === abs(hash('q85615')); fastembed's dict keeps the first key's
    // position and the last assigned value.
    const id = bm25TokenId('q4144');
    expect(english.encodeDocuments(['q4144 q4144 q85615 cat'])[0]).toEqual({
      indices: [id, CAT],
      values: [TF1_LEN4, TF1_LEN4],
    });
    expect(english.encodeQuery('q4144 q85615')).toEqual({ indices: [id], values: [1] });
  });

  it('uses the stemmer edition fastembed uses (rust-stemmers 1.2)', () => {
    expect(english.encodeQuery('organization')).toEqual({ indices: [bm25TokenId('organ')], values: [1] });
  });

  it('honours k, b and avg_len', () => {
    const encoder = new Bm25Encoder({ language: 'english', k: 2, b: 0.5, avgLen: 2 });
    // 1·3 / (1 + 2·(0.5 + 0.5·2/2)) = 3 / 3
    expect(asMap(encoder.encodeDocument('cat run'))).toEqual(
      new Map([
        [CAT, 1],
        [RUN, 1],
      ]),
    );
  });

  it('ships the NLTK stop-word lists of the contract, verbatim', () => {
    for (const language of ['english', 'danish'] as const) {
      const file = readFileSync(`${STOPWORDS}${language}`, 'utf8').split(/\r?\n/).filter(Boolean);
      expect(BM25_STOPWORDS[language]).toEqual(file);
    }
    expect(BM25_STOPWORDS.english).toHaveLength(179);
    expect(BM25_STOPWORDS.danish).toHaveLength(94);
  });

  it('rejects an unsupported model or language at construction', () => {
    expect(english.model).toBe('Qdrant/bm25');
    expect(() => createSparseEncoder('prithivida/Splade_PP_en_v1', 'english')).toThrow(
      /Unsupported sparse embedding model "prithivida\/Splade_PP_en_v1".*"Qdrant\/bm25"/,
    );
    expect(() => createSparseEncoder('Qdrant/bm42-all-minilm-l6-v2-attentions', 'english')).toThrow(
      /Unsupported sparse embedding model/,
    );
    // fastembed matches model names case-insensitively.
    expect(createSparseEncoder('qdrant/BM25', 'danish').model).toBe('Qdrant/bm25');
    // A language outside the type can only come from unchecked input.
    const german = 'german' as 'english';
    expect(() => createSparseEncoder('Qdrant/bm25', german)).toThrow(/Unsupported BM25 language "german"/);
  });
});
