import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approximateTokenCounter, TOKEN_RE } from '../../src/chunk/approx-counter.js';
import { DANISH_CORPUS } from '../fixtures/index.js';

/**
 * The approximate counter scans characters by a class table instead of running its regular
 * expression; both must find exactly the same tokens, so chunk boundaries do not move.
 */
const PIECE = 4;

/** The definition: what the regular expression finds, cut into pieces of four as the counter does. */
function reference(text: string): { count: number; offsets: Array<[number, number]> } {
  let count = 0;
  const offsets: Array<[number, number]> = [];
  for (const m of text.matchAll(TOKEN_RE)) {
    count += Math.ceil(m[0].length / PIECE);
    const end = m.index + m[0].length;
    for (let s = m.index; s < end; ) {
      let e = Math.min(end, s + PIECE);
      const code = text.charCodeAt(e);
      if (e < end && code >= 0xdc00 && code <= 0xdfff) e += 1;
      offsets.push([s, e]);
      s = e;
    }
  }
  return { count, offsets };
}

const counter = approximateTokenCounter();

function expectSame(text: string) {
  const want = reference(text);
  expect(counter.offsets(text)).toEqual(want.offsets);
  expect(counter.count(text)).toBe(want.count);
}

describe('approximate token counter', () => {
  it('finds the tokens of its regular expression in the Danish corpus', () => {
    const files = readdirSync(DANISH_CORPUS).filter((f) => f.endsWith('.md'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expectSame(readFileSync(join(DANISH_CORPUS, f), 'utf8'));
  });

  it('agrees on scripts, marks, surrogate pairs, lone surrogates and every kind of space', () => {
    const samples = [
      'Sønderjylland blev genforenet med Danmark i 1920 — efter afstemningen.',
      '東京タワーは1958年に完成した。한국어 문장도 있다.',
      'abc漢字def ひらがなカタカナ x한글y',
      'émigré naïve café (combining: e\u0301 a\u0308) ﬁ ligature',
      'emoji 👍🏽 and 𝐁𝐨𝐥𝐝 math, 𠀀𠀁 ext-B ideographs, 🇩🇰 flag',
      `lone ${'\ud800'} high, ${'\udc00'} low, end ${'\ud83d'}`,
      'tabs\tand\u00a0nbsp\u2003em\u3000ideographic\ufeffbom\u2028line\u2029para\r\n',
      'numbers ١٢٣ ٤٥٦ (Arabic-Indic), ⅠⅡⅢ roman, ½ fractions, x²',
      'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa a𝐁𝐁𝐁𝐁𝐁𝐁 pieces of four across pairs',
      '',
      '   ',
    ];
    for (const s of samples) expectSame(s);
  });

  it('agrees on random strings over a hard alphabet', () => {
    const alphabet = [
      'a',
      'Z',
      '9',
      ' ',
      '\n',
      '.',
      '-',
      'æ',
      'ø',
      '漢',
      'ア',
      '한',
      '\u0301',
      '👍',
      '𝐁',
      '\ud800',
      '\udc00',
      '\u00a0',
      '_',
      '#',
    ];
    let seed = 42;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let n = 0; n < 300; n++) {
      const len = next() % 60;
      let s = '';
      for (let k = 0; k < len; k++) s += alphabet[next() % alphabet.length];
      expectSame(s);
    }
  });
});
