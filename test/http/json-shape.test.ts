import { describe, expect, it } from 'vitest';
import { type JsonShapeLimits, JsonShapeScanner } from '../../src/http/json-shape.js';

const roomy: JsonShapeLimits = { depth: 100, keys: 1e6, items: 1e6, values: 1e7 };

/** Scans `text` split at every given cut; returns the limit exceeded, if any. */
function scan(text: string, limits: JsonShapeLimits, cuts: number[] = []) {
  const bytes = Buffer.from(text, 'utf8');
  const scanner = new JsonShapeScanner(limits);
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const over = scanner.feed(bytes.subarray(from, cut));
    if (over) return over;
    from = cut;
  }
  return undefined;
}

/** The smallest limits `text` fits: each one lower is exceeded. */
function tightest(text: string): JsonShapeLimits {
  const out = { ...roomy };
  for (const k of ['depth', 'keys', 'items', 'values'] as const) {
    let n = 0;
    while (scan(text, { ...roomy, [k]: n }) === k) n++;
    out[k] = n;
  }
  return out;
}

describe('JsonShapeScanner', () => {
  it('counts keys, items, depth and values exactly', () => {
    expect(tightest('{"a":1,"b":[1,2,3],"c":{"d":[[],{}]}}')).toEqual({
      depth: 4,
      keys: 3,
      items: 3,
      // 4 keys; 1+1+1+3+1+1+1+1 values
      values: 14,
    });
    expect(tightest('[]')).toEqual({ depth: 1, keys: 0, items: 0, values: 1 });
    expect(tightest('"x"')).toEqual({ depth: 0, keys: 0, items: 0, values: 1 });
    expect(tightest(' 12.5e3 ')).toEqual({ depth: 0, keys: 0, items: 0, values: 1 });
  });

  it('is not fooled by structure inside strings, escapes or multi-byte characters', () => {
    const text = JSON.stringify({ 'k{[,:': 'v\\"}]{[,:"', 'ø😀\u0001': ['\\', '"', 'ü,'] });
    expect(tightest(text)).toEqual({ depth: 2, keys: 2, items: 3, values: 8 });
  });

  it('gives the same counts however the body is cut into chunks', () => {
    const text = JSON.stringify({
      a: ['x\\"y', { b: [true, false, null, -1.5e-3] }],
      'é\\': { c: 'ü"}' },
      d: [[[]]],
      // Backslashes far apart (jumped to) and close together (read byte by byte).
      e: `${'a'.repeat(100)}\\"${'b'.repeat(100)}"}`,
      f: '\\\\"\\'.repeat(30),
    });
    const whole = tightest(text);
    const bytes = Buffer.byteLength(text);
    for (let cut = 0; cut <= bytes; cut++) {
      for (const k of ['depth', 'keys', 'items', 'values'] as const) {
        expect(scan(text, { ...whole }, [cut])).toBeUndefined();
        expect(scan(text, { ...whole, [k]: whole[k] - 1 }, [cut])).toBe(k);
      }
    }
  });

  it('refuses a flat object of many keys as soon as it crosses the limit', () => {
    const scanner = new JsonShapeScanner({ depth: 4, keys: 1000, items: 1000, values: 10_000 });
    let text = '{';
    for (let i = 0; i < 1000; i++) text += `"k${i}":${i},`;
    expect(scanner.feed(Buffer.from(text))).toBeUndefined();
    expect(scanner.feed(Buffer.from('"k1000"'))).toBe('keys');
    // Once exceeded it stays so, whatever follows.
    expect(scanner.feed(Buffer.from(':1}'))).toBe('keys');
  });

  it('bounds the top-level object apart from nested ones', () => {
    const limits = { ...roomy, keys: 1000, rootKeys: 2 };
    expect(scan('{"a":1,"b":{"c":1,"d":2,"e":3}}', limits)).toBeUndefined();
    expect(scan('{"a":1,"b":2,"c":3}', limits)).toBe('rootKeys');
    expect(scan('[{"a":1,"b":2,"c":3}]', limits)).toBeUndefined();
  });

  it('refuses deep nesting and long arrays', () => {
    expect(scan('['.repeat(33), { ...roomy, depth: 32 })).toBe('depth');
    expect(scan(`[${'0,'.repeat(5000)}0]`, { ...roomy, items: 5000 })).toBe('items');
    expect(scan(`[${'[0],'.repeat(5000)}[0]]`, { ...roomy, values: 10_000 })).toBe('values');
  });
});
