/**
 * The lexical side of a chunk and of a query, in one place: what the LanceDB full-text index
 * stores (analysed terms), what Qdrant's `text-sparse` holds (BM25 vectors over the same terms),
 * and what client-side BM25 scores. docs/quality.md says what each step is worth.
 *
 * Document side (Kilde's own, documented in docs/quality.md, "Compatibility"): a chunk is analysed
 * in its document's language, and its text is prefixed with its contextual header (document title,
 * heading breadcrumb). Query side: a query is analysed in every language of the collections it
 * searches, each analysis exactly fastembed's `Qdrant/bm25` (same tokens, stop words, stems and
 * ids), so a query vector for a one-language collection is bit-for-bit fastembed's and an index
 * written by the reference deployment stays searchable.
 */
import type { SparseVector } from '../../index/contract.js';
import { Bm25Encoder, bm25TokenId } from './encoder.js';
import { BM25_STOPWORDS, type Bm25Language } from './stopwords.js';
import { tokenize } from './tokenize.js';

export type { Bm25Language };

/** The languages the lexical side can stem, with the ISO 639-1 code language detection reports. */
export const BM25_LANGUAGE_CODES: Readonly<Record<Bm25Language, string>> = { english: 'en', danish: 'da' };
export const BM25_LANGUAGES = Object.keys(BM25_LANGUAGE_CODES) as Bm25Language[];

const BY_CODE = new Map(BM25_LANGUAGES.map((l) => [BM25_LANGUAGE_CODES[l], l]));

/** Each language's stop words that are not another language's (Danish and English share "i", "under", "over"). */
const OWN_STOP_WORDS: ReadonlyMap<Bm25Language, ReadonlySet<string>> = new Map(
  BM25_LANGUAGES.map((l) => [
    l,
    new Set(
      BM25_STOPWORDS[l].filter((w) => BM25_LANGUAGES.every((o) => o === l || !BM25_STOPWORDS[o].includes(w))),
    ),
  ]),
);

/** Which language an own stop word (`OWN_STOP_WORDS`) is one of. */
const STOP_WORD_LANGUAGE: ReadonlyMap<string, Bm25Language> = new Map(
  BM25_LANGUAGES.flatMap((l) => [...OWN_STOP_WORDS.get(l)!].map((w) => [w, l] as const)),
);

/** Tokens read from a text to judge its language by its stop words… */
const PROFILE_TOKENS = 400;
/** …within its first this many characters. */
const PROFILE_CHARS = PROFILE_TOKENS * 12;

/**
 * The language a text's stop words show, when they show one clearly: at least 20 words, one
 * language's own stop words a tenth of them and twice the next language's. Running text in English
 * or Danish is a third to a half stop words; a table, a list of names or a formula shows none.
 */
export function stopWordLanguage(text: string): Bm25Language | undefined {
  return languageOfTokens(profileTokens(text));
}

/** The first `PROFILE_TOKENS` words of a text, lower-cased: what `stopWordLanguage` reads. */
function profileTokens(text: string): string[] {
  return (
    text
      .slice(0, PROFILE_CHARS)
      .toLowerCase()
      .match(/[\p{L}\p{N}_]+/gu) ?? []
  ).slice(0, PROFILE_TOKENS);
}

/** Common English words no other language written in Latin letters uses as words of its own. */
const ENGLISH_MARKERS: ReadonlySet<string> = new Set([
  'the',
  'and',
  'that',
  'with',
  'this',
  'which',
  'from',
  'these',
  'their',
  'have',
  'been',
  'were',
]);

/**
 * Whether a text is plainly English: its stop words show English (`stopWordLanguage`) and words
 * only English uses ("the", "and", "which", …) are at least one in thirty (English prose: one in
 * ten; 5,180 of SciFact's 5,183 abstracts pass). The stop words alone are not enough: Portuguese
 * shares "a" and "do" with English's list. Language detection takes this as its answer for such a
 * text (src/extract/languages.ts).
 */
export function plainlyEnglish(text: string): boolean {
  const tokens = profileTokens(text);
  if (languageOfTokens(tokens) !== 'english') return false;
  let markers = 0;
  for (const t of tokens) if (ENGLISH_MARKERS.has(t)) markers++;
  return markers * 30 >= tokens.length;
}

function languageOfTokens(tokens: readonly string[]): Bm25Language | undefined {
  if (tokens.length < 20) return undefined;
  // One pass: each own stop word belongs to one language.
  const n = new Map<Bm25Language, number>();
  for (const t of tokens) {
    const l = STOP_WORD_LANGUAGE.get(t);
    if (l) n.set(l, (n.get(l) ?? 0) + 1);
  }
  const counts = BM25_LANGUAGES.map((l) => ({ l, n: n.get(l) ?? 0 })).sort((a, b) => b.n - a.n);
  const [best, next] = [counts[0]!, counts[1]];
  return best.n >= tokens.length / 10 && best.n >= 2 * (next?.n ?? 0) ? best.l : undefined;
}

/**
 * The language a chunk is analysed in: what its stop words show when they show it clearly
 * (language detection misreads some technical English as Danish, and Danish as Norwegian), else
 * the first of its document's detected languages (most likely first) that Kilde can stem, else
 * `fallback` (`SPARSE_LANGUAGE`). Ingestion and client-side BM25 both decide it from the stored
 * chunk, so they agree.
 */
export function lexicalLanguageOf(
  languages: readonly string[] | undefined,
  fallback: Bm25Language,
  text?: string,
): Bm25Language {
  const shown = text === undefined ? undefined : stopWordLanguage(text);
  return shown ?? stemmableLanguage(languages, fallback);
}

/** The first of `languages` (ISO 639-1) that Kilde can stem, else `fallback`. */
function stemmableLanguage(languages: readonly string[] | undefined, fallback: Bm25Language): Bm25Language {
  for (const code of languages ?? []) {
    const language = BY_CODE.get(code);
    if (language) return language;
  }
  return fallback;
}

/** What a chunk's contextual header is made of (fields of its `meta`). */
export interface ChunkContext {
  title?: string | undefined;
  headers?: readonly string[] | undefined;
}

/** How much of a chunk's start is searched for a header line it already carries. */
const HEAD_CHARS = 300;

const squash = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();

/**
 * A word broken over two lines with a hyphen ("besæt-\ntelse", as PDF text and text converted from
 * it carry them): joined again for the index. A lower-case continuation keeps "Nord-\nSlesvig"-like
 * compounds of names apart.
 */
const HYPHENATED = /(\p{L})-[ \t]*\r?\n[ \t]*(\p{Ll})/gu;
/** What every match of HYPHENATED holds. */
const HYPHEN_AT_BREAK = /-[ \t]*\r?\n/;

/**
 * The text the lexical side indexes for a chunk (its contextual chunk header): the document title
 * and heading breadcrumb (outermost first), one per line, above the chunk's own text, with words
 * hyphenated over a line break joined. A header line the chunk already carries near its start (a
 * Markdown section's first chunk opens with its heading) is not repeated. Only the index sees this:
 * the stored and returned `content` stays the chunk's text.
 */
export function contextualText(content: string, context: ChunkContext): string {
  const header = contextHeader(content, context);
  const body = joinHyphenated(content);
  return header === undefined ? body : `${header}\n\n${body}`;
}

/** The header lines `contextualText` puts above a chunk, joined by line breaks; undefined when none. */
function contextHeader(content: string, context: ChunkContext): string | undefined {
  let head: string | undefined;
  const lines: string[] = [];
  for (const line of [context.title, ...(context.headers ?? [])]) {
    const l = line?.trim();
    if (!l || lines.includes(l)) continue;
    // The chunk's start, squashed only when there is a header line to look for in it.
    head ??= squash(content.slice(0, HEAD_CHARS));
    if (head.includes(squash(l))) continue;
    lines.push(l);
  }
  return lines.length === 0 ? undefined : lines.join('\n');
}

/** `content` with its words hyphenated over a line break joined (HYPHENATED). */
function joinHyphenated(content: string): string {
  // Most chunks have no hyphen before a line break: one quick scan spares trying every letter.
  return HYPHEN_AT_BREAK.test(content) ? content.replace(HYPHENATED, '$1$2') : content;
}

/**
 * Whether a language's stop words stay in the full-text index's terms (query and document alike).
 * Sparse vectors always drop them, as fastembed does. Measured with `npm run bench:quality`
 * (docs/quality.md): NLTK's Danish list holds words that carry meaning in a question ("under",
 * "mod", "over", "efter", "mange"), and dropping them costs Danish hits; the English list is kept
 * out of the index.
 */
const KEEP_STOP_WORDS: Readonly<Record<Bm25Language, boolean>> = {
  english: false,
  danish: true,
};

/**
 * Words that ask rather than say what is asked about, left out of a query (its text is rewritten
 * before analysis, so its sparse vector is fastembed's vector of the rewritten text). English
 * question words are NLTK stop words already; Danish ones mostly are not ("hvilken", "hvem",
 * "hvornår", "hvad", "hvor"), and "følgende" is the multiple-choice phrasing ("Hvilket af følgende …").
 */
const QUESTION_WORDS: Readonly<Record<Bm25Language, ReadonlySet<string>>> = {
  english: new Set(),
  danish: new Set([
    'hvad',
    'hvor',
    'hvilken',
    'hvilket',
    'hvilke',
    'hvem',
    'hvornår',
    'hvordan',
    'hvorfor',
    'hvortil',
    'hvorfra',
    'hvorledes',
    'følgende',
  ]),
};

/** `text` without its question words in `language`, unless nothing else would be left. */
export function withoutQuestionWords(text: string, language: Bm25Language): string {
  const words = QUESTION_WORDS[language];
  if (words.size === 0) return text;
  const rewritten = text.replace(/[\p{L}\p{M}]+/gu, (w) => (words.has(w.toLowerCase()) ? ' ' : w));
  return /[\p{L}\p{N}]/u.test(rewritten) ? rewritten : text;
}

/** One chunk's lexical side: its analysed terms (a full-text index's input) and its BM25 vector. */
export interface DocumentLexical {
  terms: string[];
  sparse: SparseVector;
}

/** One query's lexical side over its languages. */
export interface QueryLexical {
  /** Distinct analysed terms, in query order. */
  terms: string[];
  /** Every term weight 1 (the engine applies IDF), as fastembed's `query_embed`. */
  sparse: SparseVector;
}

/** Analyses documents and queries with one BM25 encoder per language, made on first use. */
export class LexicalAnalyzer {
  private readonly encoders = new Map<Bm25Language, Bm25Encoder>();

  constructor(readonly fallback: Bm25Language) {}

  encoder(language: Bm25Language): Bm25Encoder {
    let encoder = this.encoders.get(language);
    if (!encoder) {
      encoder = new Bm25Encoder({ language });
      this.encoders.set(language, encoder);
    }
    return encoder;
  }

  /** The lexical side of one chunk's (contextual) text in its document's language. */
  document(text: string, language: Bm25Language): DocumentLexical {
    return this.#analysed(tokenize(text), language);
  }

  /** `document(text, language).terms` without the BM25 vector (lexical-only ingestion writes none). */
  documentTerms(text: string, language: Bm25Language): string[] {
    return this.encoder(language).termsOfTokens(tokenize(text), KEEP_STOP_WORDS[language]);
  }

  /**
   * The lexical side of a stored chunk, deciding what the ingestion pipeline decided from it before
   * (`document(contextualText(content, context), lexicalLanguageOf(languages, fallback, content))`,
   * the same terms and vector) with its text read once: the words of the chunk's body serve both its
   * stop-word language (`stopWordLanguage`) and the analysis. Word runs are the same whether a
   * text is lower-cased before or after its other characters become spaces (no character outside
   * `[\p{L}\p{N}_]` lower-cases into one; a test checks every code point); only Greek sigma's
   * final form can differ, which no stop word holds.
   */
  chunk(
    content: string,
    context: ChunkContext,
    languages: readonly string[] | undefined,
    fallback: Bm25Language,
    sparse: boolean,
  ): { terms: string[]; sparse?: SparseVector } {
    const header = contextHeader(content, context);
    const body = joinHyphenated(content);
    const bodyTokens = tokenize(body);
    // The body's words are the content's when no hyphen was joined and the content is no longer
    // than what `stopWordLanguage` reads; otherwise the content is read apart, as before.
    const shown =
      body === content && content.length <= PROFILE_CHARS
        ? languageOfTokens(
            bodyTokens.length > PROFILE_TOKENS ? bodyTokens.slice(0, PROFILE_TOKENS) : bodyTokens,
          )
        : stopWordLanguage(content);
    const language = shown ?? stemmableLanguage(languages, fallback);
    // tokenize(`${header}\n\n${body}`) is the header's words, then the body's.
    const tokens = header === undefined ? bodyTokens : [...tokenize(header), ...bodyTokens];
    if (!sparse) return { terms: this.encoder(language).termsOfTokens(tokens, KEEP_STOP_WORDS[language]) };
    return this.#analysed(tokens, language);
  }

  /** `document` of a tokenised text: content terms for the vector, stop words kept where indexed. */
  #analysed(tokens: readonly string[], language: Bm25Language): DocumentLexical {
    const encoder = this.encoder(language);
    const terms = encoder.termsOfTokens(tokens);
    const indexed = KEEP_STOP_WORDS[language] ? encoder.termsOfTokens(tokens, true) : terms;
    return { terms: indexed, sparse: encoder.encodeTerms(terms) };
  }

  /**
   * A query analysed in each of `languages` (those of the collections searched); terms and ids are
   * the union, so one analysis matches the documents of its language. With one language the vector
   * is exactly fastembed's `query_embed` of the text (question words aside).
   */
  query(text: string, languages: readonly Bm25Language[]): QueryLexical {
    const terms = new Set<string>();
    const ids = new Set<number>();
    const all = languages.length > 0 ? languages : [this.fallback];
    // Analysed in several languages, a query leaves out the stop words of those that drop theirs
    // in every analysis: the Danish analysis of an English query must not search for "the".
    const skip =
      all.length > 1
        ? new Set(all.filter((l) => !KEEP_STOP_WORDS[l]).flatMap((l) => BM25_STOPWORDS[l]))
        : undefined;
    for (const language of all) {
      const encoder = this.encoder(language);
      const asked = withoutQuestionWords(text, language);
      const content = encoder.terms(asked, false, skip);
      for (const term of content) ids.add(bm25TokenId(term));
      for (const term of KEEP_STOP_WORDS[language] ? encoder.terms(asked, true, skip) : content)
        terms.add(term);
    }
    return { terms: [...terms], sparse: { indices: [...ids], values: Array.from(ids, () => 1) } };
  }
}
