import type { TokenCounter } from './chunker.js';

/** Characters per estimated sub-word piece. */
const PIECE = 4;

/*
 * Word runs (letters, marks, digits, joined by nothing else), or one ideograph/kana/hangul character,
 * or one other non-space character (punctuation, symbols, emoji). This is the definition; the scanner
 * below implements it without a regular expression (test/chunk/approx-counter.test.ts holds the two
 * to the same output).
 */
export const TOKEN_RE =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{M}\p{N}]+|[^\s\p{L}\p{M}\p{N}]/gu;

/** Character classes of the scanner. */
const SPACE = 1;
const WORD = 2;
/** A word character that is also a token on its own where a token starts (ideograph, kana, hangul). */
const CJK = 3;
const OTHER = 4;

const CJK_RE = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]$/u;
const WORD_RE = /^[\p{L}\p{M}\p{N}]$/u;
const SPACE_RE = /^\s$/u;

function classify(ch: string): number {
  if (CJK_RE.test(ch)) return CJK;
  if (WORD_RE.test(ch)) return WORD;
  if (SPACE_RE.test(ch)) return SPACE;
  return OTHER;
}

/** Classes of the Basic Multilingual Plane, filled on first sight of each code unit. */
const BMP = new Uint8Array(0x10000);
for (let c = 0; c < 128; c++) BMP[c] = classify(String.fromCharCode(c));

/** The class of the code point at `i` and its length in code units (2 for a surrogate pair). */
function classAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0xd800 || c > 0xdbff || i + 1 >= text.length) {
    let k = BMP[c]!;
    if (k === 0) {
      // A lone surrogate is neither a letter nor a space: one token on its own, as in the regex.
      k = classify(String.fromCharCode(c));
      BMP[c] = k;
    }
    return k;
  }
  const d = text.charCodeAt(i + 1);
  if (d < 0xdc00 || d > 0xdfff) return OTHER;
  return classify(text.slice(i, i + 2)) | 8;
}

/**
 * Calls `run(start, end)` for every token of `TOKEN_RE` in `text`, in order: what
 * `text.matchAll(TOKEN_RE)` finds, several times faster (no match objects, a class table instead of
 * Unicode property tests for every character).
 */
function scan(text: string, run: (start: number, end: number) => void): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = classAt(text, i);
    const width = c & 8 ? 2 : 1;
    const k = c & 7;
    if (k === SPACE) {
      i += width;
      continue;
    }
    if (k === OTHER || k === CJK) {
      run(i, i + width);
      i += width;
      continue;
    }
    // A word run: every following letter, mark or digit, ideographs included.
    let j = i + width;
    while (j < n) {
      const d = classAt(text, j);
      const dk = d & 7;
      if (dk !== WORD && dk !== CJK) break;
      j += d & 8 ? 2 : 1;
    }
    run(i, j);
    i = j;
  }
}

/**
 * The offline default when no tokenizer file is configured: an estimate of a sub-word (WordPiece /
 * SentencePiece) tokenizer. Every punctuation mark or symbol is one token, every ideograph is one
 * token, and a word costs one token per started 4 characters. Measured against the English-vocabulary
 * all-MiniLM-L6-v2 WordPiece tokenizer it counts ~30% more on English prose (SciFact) and ~20% fewer
 * on the Danish textbook, which that vocabulary splits into many pieces. It sizes chunks; it is not
 * exact, so a deployment with a model limit should configure the model's tokenizer.json
 * (the dense embedder still splits any input over its limit).
 */
export function approximateTokenCounter(): TokenCounter {
  return {
    source: 'approximate',
    specialTokens: 2,
    count(text) {
      let n = 0;
      scan(text, (start, end) => {
        n += Math.ceil((end - start) / PIECE);
      });
      return n;
    },
    offsets(text) {
      const out: Array<[number, number]> = [];
      scan(text, (start, end) => {
        let s = start;
        while (s < end) {
          let e = Math.min(end, s + PIECE);
          // Never cut between the two halves of a surrogate pair.
          if (e < end && isLowSurrogate(text.charCodeAt(e))) e += 1;
          out.push([s, e]);
          s = e;
        }
      });
      return out;
    },
  };
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
