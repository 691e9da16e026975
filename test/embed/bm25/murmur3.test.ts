import { describe, expect, it } from 'vitest';
import { bm25TokenId } from '../../../src/embed/bm25/encoder.js';
import { murmur3Utf8, murmur3X86_32 } from '../../../src/embed/bm25/murmur3.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('MurmurHash3 x86_32', () => {
  it('gives mmh3.hash() results: signed, seed 0, over UTF-8', () => {
    // mmh3's documented examples.
    expect(murmur3Utf8('foo')).toBe(-156908512);
    expect(murmur3Utf8('foo', 42)).toBe(-1322301282);
    expect(murmur3Utf8('')).toBe(0);
    expect(murmur3Utf8('hello')).toBe(613153351);
  });

  it('matches the reference implementation test vectors (every tail length)', () => {
    const seed = 0x9747b28c;
    expect(murmur3X86_32(bytes(''), 1) >>> 0).toBe(0x514e28b7);
    expect(murmur3X86_32(bytes(''), 0xffffffff) >>> 0).toBe(0x81f16f39);
    expect(murmur3X86_32(new Uint8Array(4), 0) >>> 0).toBe(0x2362f9de);
    expect(murmur3X86_32(bytes('abc'), 0) >>> 0).toBe(0xb3dd93fa);
    expect(murmur3X86_32(bytes('a'), seed) >>> 0).toBe(0x7fa09ea6);
    expect(murmur3X86_32(bytes('ab'), seed) >>> 0).toBe(0x74875592);
    expect(murmur3X86_32(bytes('abc'), seed) >>> 0).toBe(0xc84a62dd);
    expect(murmur3X86_32(bytes('abcd'), seed) >>> 0).toBe(0xf0478627);
    expect(murmur3X86_32(bytes('aaaa'), seed) >>> 0).toBe(0x5a97808a);
    expect(murmur3X86_32(bytes('Hello, world!'), seed) >>> 0).toBe(0x24884cba);
    expect(murmur3X86_32(bytes('The quick brown fox jumps over the lazy dog'), seed) >>> 0).toBe(0x2fa826cd);
  });

  it('hashes non-ASCII text as UTF-8, astral characters included', () => {
    expect(murmur3X86_32(bytes('ππππππππ'), 0x9747b28c) >>> 0).toBe(0xd58063c1);
    expect(murmur3Utf8('ππππππππ', 0x9747b28c)).toBe(murmur3X86_32(bytes('ππππππππ'), 0x9747b28c));
    expect(murmur3Utf8('københavn')).toBe(1027700163);
    expect(murmur3Utf8('😀')).toBe(-1095487750);
  });

  it('hashes a long token the same through the growing scratch buffer', () => {
    const long = 'æøå'.repeat(400);
    expect(murmur3Utf8(long)).toBe(murmur3X86_32(bytes(long)));
    expect(murmur3Utf8('foo')).toBe(-156908512);
  });
});

describe('BM25 token id', () => {
  it('is abs() of the signed hash, so h and -h share an id', () => {
    expect(bm25TokenId('foo')).toBe(156908512);
    expect(bm25TokenId('cat')).toBe(1751422759);
    expect(murmur3Utf8('q4144')).toBe(501381448);
    expect(murmur3Utf8('q85615')).toBe(-501381448);
    expect(bm25TokenId('q85615')).toBe(bm25TokenId('q4144'));
  });
});
