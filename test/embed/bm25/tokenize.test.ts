import { describe, expect, it } from 'vitest';
import { codePointLength, isPunctuation, tokenize } from '../../../src/embed/bm25/tokenize.js';

// Expected tokens were produced by fastembed's two steps run in CPython 3.11:
// SimpleTokenizer.tokenize(remove_non_alphanumeric(text)).
describe('BM25 tokenisation', () => {
  it.each<[string, string[]]>([
    [
      "Hello, World! It's 2024 — naïve café_au_lait.",
      ['hello', 'world', 'it', 's', '2024', 'naïve', 'café_au_lait'],
    ],
    ['ΟΔΟΣ.ΑΒ ΟΔΟΣ ΑΣ-Β', ['οδος', 'αβ', 'οδος', 'ας', 'β']],
    ['İstanbul İ', ['i', 'stanbul', 'i']],
    ['x²+y³ ½ Ⅻ ⑦', ['x²', 'y³', '½', 'ⅻ', '⑦']],
    ['日本語のテキスト、です。', ['日本語のテキスト', 'です']],
    ['cafe\u0301 re\u0301sume\u0301', ['cafe', 're', 'sume']],
    ['tab\there\nnew\u00a0line\u2003em', ['tab', 'here', 'new', 'line', 'em']],
    ['foo_bar __ _ _x', ['foo_bar', '__', '_', '_x']],
    ['Straße ǅ ﬁne', ['straße', 'ǆ', 'ﬁne']],
    ['a\u200bb\ufeffc', ['a', 'b', 'c']],
    ['😀emoji😀 𝐀𝐁𝐂', ['emoji', '𝐀𝐁𝐂']],
    ['', []],
    [' \n\t ', []],
  ])('%j', (text, tokens) => {
    expect(tokenize(text)).toEqual(tokens);
  });

  it("gives what fastembed's two steps give, as regular expressions, on random text of every script", () => {
    // Step 1 and step 2 as written before tokenize() read the text in one pass.
    const steps = (text: string) =>
      text
        .replace(/[^\p{L}\p{N}_]+/gu, ' ')
        .toLowerCase()
        .match(/[\p{L}\p{N}_]+/gu) ?? [];
    let seed = 7;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let k = 0; k < 20_000; k++) {
      let text = '';
      for (let j = 0; j < 1 + (k % 24); j++) {
        const r = next();
        const cp =
          r < 0.4
            ? 32 + Math.floor(next() * 95)
            : r < 0.7
              ? 0x80 + Math.floor(next() * 0x700)
              : r < 0.9
                ? Math.floor(next() * 0x10000)
                : 0x10000 + Math.floor(next() * 0x20000);
        // Lone surrogates too: a code unit in the surrogate range on its own.
        text += cp >= 0xd800 && cp <= 0xdfff ? String.fromCharCode(cp) : String.fromCodePoint(cp);
      }
      expect(tokenize(text), JSON.stringify(text)).toEqual(steps(text));
    }
    expect(tokenize('ΑΣ.ΑΣ ΣΑΣ σΣ İİ a\u0307b ʰa')).toEqual(steps('ΑΣ.ΑΣ ΣΑΣ σΣ İİ a\u0307b ʰa'));
  });

  it('treats a lone surrogate as a separator', () => {
    expect(tokenize('ab\ud800cd')).toEqual(['ab', 'cd']);
  });

  it('measures token length in code points, as Python len() does', () => {
    expect(codePointLength('abc')).toBe(3);
    expect(codePointLength('𝐀𝐁𝐂')).toBe(3);
    expect(codePointLength('a\ud800')).toBe(2);
  });

  it('knows Unicode punctuation (category P) one character at a time', () => {
    expect(isPunctuation('_')).toBe(true);
    expect(isPunctuation('‿')).toBe(true);
    expect(isPunctuation('__')).toBe(false);
    expect(isPunctuation('a')).toBe(false);
  });
});
