/**
 * Snowball algorithms count characters (code points): `hop 3`, `next`, `atlimit`. The stemmers
 * here index UTF-16 strings, which is the same thing as long as every character is one code
 * unit. A word with characters outside the BMP is stemmed with each of them swapped for a
 * private-use character first (none of which belongs to any grouping, exactly like the
 * original), and swapped back afterwards.
 */

const SURROGATE = /[\uD800-\uDFFF]/;
const PRIVATE_USE_FIRST = 0xe000;
const PRIVATE_USE_LAST = 0xf8ff;

export function stemByCodePoints(word: string, stem: (bmpWord: string) => string): string {
  if (!SURROGATE.test(word)) return stem(word);
  const toPrivate = new Map<string, string>();
  const fromPrivate = new Map<string, string>();
  let next = PRIVATE_USE_FIRST;
  let bmp = '';
  for (const ch of word) {
    if (ch.length === 1) {
      bmp += ch;
      continue;
    }
    let stand = toPrivate.get(ch);
    if (stand === undefined) {
      // Skip private-use characters that the word itself contains.
      while (next <= PRIVATE_USE_LAST && word.includes(String.fromCharCode(next))) next++;
      if (next > PRIVATE_USE_LAST) return stem(word);
      stand = String.fromCharCode(next++);
      toPrivate.set(ch, stand);
      fromPrivate.set(stand, ch);
    }
    bmp += stand;
  }
  let out = '';
  for (const ch of stem(bmp)) out += fromPrivate.get(ch) ?? ch;
  return out;
}

/** The longest of `suffixes` (sorted longest first) that `word` ends with, or undefined. */
export function longestSuffix(word: string, suffixes: readonly string[]): string | undefined {
  for (const s of suffixes) if (word.endsWith(s)) return s;
  return undefined;
}

export function byLengthDesc(list: readonly string[]): string[] {
  return [...list].sort((a, b) => b.length - a.length);
}
