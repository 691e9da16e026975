import { describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../../src/chunk/approx-counter.js';
import type { TokenCounter } from '../../src/chunk/chunker.js';
import {
  halve,
  poolVectors,
  specialTokensOf,
  splitToBudget,
  textBudget,
} from '../../src/embed/token-budget.js';
import { parseRetryAfter } from '../../src/net/http.js';

const c = approximateTokenCounter();

describe('windows of long inputs', () => {
  it('keeps a text that fits as one window', () => {
    expect(splitToBudget('a short text', 10, c)).toEqual([{ text: 'a short text', tokens: 4 }]);
  });

  it('cuts at word gaps into windows within the budget that together hold every token', () => {
    const text = Array.from({ length: 50 }, (_, i) => `ord${i}`).join(' ');
    const windows = splitToBudget(text, 16, c);
    expect(windows.length).toBeGreaterThan(2);
    for (const w of windows) {
      expect(w.tokens).toBeLessThanOrEqual(16);
      expect(c.count(w.text)).toBe(w.tokens);
    }
    expect(windows.map((w) => w.text).join(' ')).toBe(text);
  });

  it('cuts inside a word only when the word is longer than half a window', () => {
    const text = `${'x'.repeat(100)} tail`;
    const windows = splitToBudget(text, 10, c);
    expect(windows.map((w) => w.text).join('')).toBe(text);
    expect(windows.every((w) => w.tokens <= 10)).toBe(true);
  });

  it('leaves room for the prefix and special tokens, and refuses a budget the prefix eats', () => {
    expect(specialTokensOf(c)).toBe(2);
    expect(textBudget(512, 'passage: ', c)).toBe(512 - 3 - 2); // pass|age + ':' and [CLS]/[SEP]
    const counter: TokenCounter = { ...c, specialTokens: 0 };
    expect(specialTokensOf(counter)).toBe(0);
    expect(textBudget(512, 'passage: ', counter)).toBe(509);
    expect(() => textBudget(8, 'a very long instruction prefix: ', c)).toThrow(/EMBEDDING_MAX_TOKENS=8/);
  });

  it('halves at the middle token and cannot halve a single token', () => {
    expect(halve('one two three four', c)?.map((w) => w.text)).toEqual(['one two ', 'three four']);
    expect(halve('one', c)).toBeUndefined();
  });

  it('pools by token-weighted mean of unit vectors, re-normalised', () => {
    const pooled = poolVectors(
      [
        [2, 0],
        [0, 1],
      ],
      [3, 1],
    );
    expect(pooled[0]).toBeCloseTo(3 / Math.sqrt(10), 12);
    expect(pooled[1]).toBeCloseTo(1 / Math.sqrt(10), 12);
  });
});

describe('Retry-After', () => {
  it('reads delta-seconds and HTTP dates, and ignores garbage', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
