/**
 * fastembed's BM25 tokenisation, step for step:
 *   1. `remove_non_alphanumeric`: every character that is neither a word character nor
 *      whitespace becomes a space;
 *   2. `SimpleTokenizer`: lower-case, every non-word character becomes a space, split.
 * A word character is Python `re`'s Unicode `\w`: `str.isalnum()` or `_`, which is exactly
 * the general categories L* and N* plus `_` (checked against Python's `unicodedata`).
 * Step 1 runs before lower-casing on purpose: it decides where Σ counts as word-final (ς).
 */

const NON_WORD = /[^\p{L}\p{N}_]+/gu;
const WORD = /[\p{L}\p{N}_]+/gu;

export function tokenize(text: string): string[] {
  // Taking word runs after lower-casing is step 2's replace-and-split in one go; it matters
  // because lower-casing can yield non-word characters (İ -> i + U+0307).
  return text.replace(NON_WORD, ' ').toLowerCase().match(WORD) ?? [];
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
