/**
 * BM25 as sparse vectors, bit-compatible with fastembed's `Qdrant/bm25` (fastembed/sparse/bm25.py):
 * the same tokens, stop words, Snowball stems, token ids and term-frequency weights, so query
 * vectors made here match documents indexed by the Python reference and vice versa. IDF is
 * applied by Qdrant (`modifier: idf` on the `text-sparse` vector), not here.
 */
import type { SparseVector } from '../../index/contract.js';
import type { SparseEncoder } from '../sparse.js';
import { murmur3Utf8 } from './murmur3.js';
import { stemDanish } from './stemmer-danish.js';
import { stemEnglish } from './stemmer-english.js';
import { BM25_STOPWORDS, type Bm25Language } from './stopwords.js';
import { codePointLength, isPunctuation, tokenize } from './tokenize.js';

export interface Bm25Options {
  language: Bm25Language;
  /** Term-frequency saturation; fastembed's default. */
  k?: number;
  /** Document-length normalisation; fastembed's default. */
  b?: number;
  /** Assumed average document length in tokens; fastembed's default. */
  avgLen?: number;
  /** Longer tokens (in code points) are dropped; fastembed's default. */
  tokenMaxLength?: number;
}

export const BM25_MODEL = 'Qdrant/bm25';

/** Distinct tokens remembered per encoder; a vocabulary's worth, dropped wholesale when full. */
const STEM_CACHE_SIZE = 200_000;

const STEMMERS: Record<Bm25Language, (word: string) => string> = {
  // The edition fastembed's py_rust_stemmers (rust-stemmers 1.2) implements.
  english: (word) => stemEnglish(word, 'snowball-2'),
  danish: stemDanish,
};

/** `abs(mmh3.hash(token))`; Python's abs of -2^31 is 2^31, as it is here. */
export function bm25TokenId(token: string): number {
  return Math.abs(murmur3Utf8(token));
}

export class Bm25Encoder implements SparseEncoder {
  readonly model = BM25_MODEL;
  readonly language: Bm25Language;
  private readonly k: number;
  private readonly b: number;
  private readonly avgLen: number;
  private readonly tokenMaxLength: number;
  private readonly stopwords: ReadonlySet<string>;
  private readonly stem: (word: string) => string;
  /** token -> stem, '' when the token is filtered out; text repeats words, stemming is the cost. */
  private readonly stems = new Map<string, string>();

  constructor(options: Bm25Options) {
    if (!Object.hasOwn(STEMMERS, options.language)) {
      throw new Error(`Unsupported BM25 language "${options.language}": use "english" or "danish"`);
    }
    this.language = options.language;
    this.k = options.k ?? 1.2;
    this.b = options.b ?? 0.75;
    this.avgLen = options.avgLen ?? 256;
    this.tokenMaxLength = options.tokenMaxLength ?? 40;
    this.stopwords = new Set(BM25_STOPWORDS[options.language]);
    this.stem = STEMMERS[options.language];
  }

  /**
   * The stemmed terms of `text`, in order, as fastembed's `raw_embed` derives them. With
   * `keepStopWords` the stop words stay (stemmed like any word): a full-text index's input, never a
   * sparse vector's. Tokens in `skip` are left out too (another language's stop words).
   */
  terms(text: string, keepStopWords = false, skip?: ReadonlySet<string>): string[] {
    return this.termsOfTokens(tokenize(text), keepStopWords, skip);
  }

  /** `terms` of a text already tokenised (`tokenize`): one tokenisation serves several analyses. */
  termsOfTokens(tokens: readonly string[], keepStopWords = false, skip?: ReadonlySet<string>): string[] {
    const terms: string[] = [];
    for (const token of tokens) {
      // fastembed lower-cases again before the stop-word test and the stemmer; tokenize()
      // already did, and lower-casing is idempotent. Stop words cannot be punctuation, so testing
      // them first is fastembed's order.
      if (!keepStopWords && this.stopwords.has(token)) continue;
      if (skip?.has(token)) continue;
      let stemmed = this.stems.get(token);
      if (stemmed === undefined) {
        stemmed = this.filterAndStem(token);
        if (this.stems.size >= STEM_CACHE_SIZE) this.stems.clear();
        this.stems.set(token, stemmed);
      }
      if (stemmed.length > 0) terms.push(stemmed);
    }
    return terms;
  }

  /** fastembed's `_stem` for one (already lower-cased) token that is not a stop word. */
  private filterAndStem(token: string): string {
    if (isPunctuation(token)) return '';
    if (token.length > this.tokenMaxLength && codePointLength(token) > this.tokenMaxLength) return '';
    return this.stem(token);
  }

  encodeDocuments(texts: readonly string[]): SparseVector[] {
    return texts.map((text) => this.encodeDocument(text));
  }

  encodeDocument(text: string): SparseVector {
    return this.encodeTerms(this.terms(text));
  }

  /** The document vector of terms `terms(text)` produced: what `encodeDocument(text)` returns. */
  encodeTerms(terms: readonly string[]): SparseVector {
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    const docLen = terms.length;
    // Same operation order as fastembed, so the doubles come out identical.
    const norm = this.k * (1 - this.b + (this.b * docLen) / this.avgLen);
    // Keyed by id in first-seen order; on a hash collision the later term's weight wins,
    // as it does in fastembed's dict.
    const weights = new Map<number, number>();
    for (const [term, tf] of counts) weights.set(bm25TokenId(term), (tf * (this.k + 1)) / (tf + norm));
    return { indices: [...weights.keys()], values: [...weights.values()] };
  }

  encodeQuery(text: string): SparseVector {
    const ids = new Set<number>();
    for (const term of this.terms(text)) ids.add(bm25TokenId(term));
    return { indices: [...ids], values: Array.from(ids, () => 1) };
  }
}
