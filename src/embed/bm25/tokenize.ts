/**
 * fastembed's BM25 tokenisation, step for step:
 *   1. `remove_non_alphanumeric`: every character that is neither a word character nor
 *      whitespace becomes a space;
 *   2. `SimpleTokenizer`: lower-case, every non-word character becomes a space, split.
 * A word character is Python `re`'s Unicode `\w`: `str.isalnum()` or `_`, which is exactly
 * the general categories L* and N* plus `_` (checked against Python's `unicodedata`).
 * Step 1 runs before lower-casing on purpose: it decides where Σ counts as word-final (ς).
 */

const WORD = /[\p{L}\p{N}_]+/gu;
const WORD_CHAR = /^[\p{L}\p{N}_]$/u;
/** ASCII word characters (letters, digits, `_`): most text is decided without a regular expression. */
const ASCII_WORD = new Uint8Array(128).map((_, c) => (/^\w$/.test(String.fromCharCode(c)) ? 1 : 0));

/**
 * The tokens of `text`: its runs of word characters (step 1's split), each lower-cased, and a run
 * that is not plain ASCII split again where lower-casing made non-word characters (İ -> i + U+0307);
 * an ASCII run lower-cases to one token. This is step 1 and step 2 exactly (the lower-casing of a
 * run cannot see past the separators around it: Greek final sigma is decided as on the whole text),
 * in one pass over the text instead of two regular-expression replacements and a match over all of
 * it: 3–5 times less CPU on SciFact abstracts and the Danish chapters (docs/performance.md).
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const start = i;
    let ascii = true;
    let upper = false;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c < 128) {
        if (ASCII_WORD[c] === 0) break;
        if (c >= 65 && c <= 90) upper = true;
        i++;
        continue;
      }
      const width = wordCharAt(text, i);
      if (width === 0) break;
      ascii = false;
      i += width;
    }
    if (i === start) {
      // A separator: one code point (a lone surrogate is one).
      i += text.codePointAt(i)! > 0xffff ? 2 : 1;
      continue;
    }
    const run = text.slice(start, i);
    if (ascii) out.push(upper ? run.toLowerCase() : run);
    else {
      const words = run.toLowerCase().match(WORD);
      if (words) for (const w of words) out.push(w);
    }
  }
  return out;
}

/** The UTF-16 width of the word character at `i` (2 for one beyond the BMP), 0 when it is not one. */
function wordCharAt(text: string, i: number): number {
  const cp = text.codePointAt(i)!;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  const width = cp > 0xffff ? 2 : 1;
  return WORD_CHAR.test(text.slice(i, i + width)) ? width : 0;
}

/** Python's `len()`: code points, not UTF-16 units. */
export function codePointLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is a single code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Unicode punctuation (general category P*), as fastembed's `get_all_punctuation()`. */
const PUNCTUATION = /^\p{P}$/u;

export function isPunctuation(token: string): boolean {
  return PUNCTUATION.test(token);
}
