import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenCounter } from '../../src/chunk/chunker.js';
import {
  chooseTokenCounter,
  loadTokenCounter,
  TokenizerUnavailableError,
} from '../../src/chunk/tokenizer.js';
import { TOKENIZER } from '../fixtures/index.js';

const MINILM = TOKENIZER;

describe('loadTokenCounter with a local tokenizer.json (all-MiniLM-L6-v2)', () => {
  let counter: TokenCounter;
  beforeAll(async () => {
    counter = await loadTokenCounter(MINILM);
  });
  afterAll(async () => {
    await counter.close?.();
  });

  it('counts WordPiece tokens without [CLS]/[SEP], which it reports separately', () => {
    // hello | world | !
    expect(counter.count('Hello world!')).toBe(3);
    // una | ##ffa | ##ble
    expect(counter.count('unaffable')).toBe(3);
    // h ##va ##d | var | den | spans ##ke | sy ##ge | ?
    expect(counter.count('Hvad var den spanske syge?')).toBe(10);
    expect(counter.count('')).toBe(0);
    expect(counter.specialTokens).toBe(2);
    expect(counter.source).toBe(MINILM);
  });

  it('counts a batch without blocking the event loop: same counts as the blocking form', async () => {
    const texts = Array.from(
      { length: 200 },
      (_, i) => `Afsnit ${i}: ${'den spanske syge hærgede '.repeat(400)}`,
    );
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const counts = await counter.countManyAsync?.(texts);
    clearInterval(tick);
    expect(counts).toEqual(counter.countMany?.(texts));
    // The loop kept turning while the tokenizer thread worked.
    expect(turns).toBeGreaterThan(0);
    expect(await counter.countManyAsync?.([])).toEqual([]);
  });

  it('returns offsets into the original text, in UTF-16 units even after an emoji', () => {
    const text = 'Den Spanske Syge 🎉 æøå';
    const offsets = counter.offsets(text);
    expect(offsets.map(([s, e]) => text.slice(s, e))).toEqual([
      'Den',
      'Spans',
      'ke',
      'Sy',
      'ge',
      '🎉',
      'æ',
      'ø',
      'å',
    ]);
  });

  it("ignores the file's truncation (256) and padding settings", () => {
    const long = 'word '.repeat(1000);
    expect(counter.count(long)).toBe(1000);
  });

  it('counts a batch like one text at a time', () => {
    const texts = ['Hello world!', 'unaffable', '', 'Hvad var den spanske syge?'];
    expect(counter.countMany?.(texts)).toEqual(texts.map((t) => counter.count(t)));
  });

  it('loads from the directory holding tokenizer.json and from a file:// URL', async () => {
    for (const name of [dirname(MINILM), `file://${MINILM}`]) {
      const c = await loadTokenCounter(name);
      try {
        expect(c.count('Hello world!')).toBe(3);
        expect(c.source).toBe(MINILM);
      } finally {
        await c.close?.();
      }
    }
  });
});

describe('loadTokenCounter failures and the approximation', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kilde-tok-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a hub id, asking for a local path (never downloads)', async () => {
    const err = await loadTokenCounter('intfloat/multilingual-e5-small').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenizerUnavailableError);
    expect((err as Error).message).toMatch(/not a local path.*TOKENIZER_MODEL.*tokenizer\.json/);
  });

  it('names a missing file, a directory without tokenizer.json and a broken file', async () => {
    await expect(loadTokenCounter(join(dir, 'nope.json'))).rejects.toThrow(/does not exist/);
    await expect(loadTokenCounter(dir)).rejects.toThrow(/has no tokenizer\.json/);
    const broken = join(dir, 'tokenizer.json');
    await writeFile(broken, '{"not": "a tokenizer"}');
    const err = await loadTokenCounter(broken).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenizerUnavailableError);
    expect((err as Error).message).toContain(`Cannot load tokenizer ${broken}`);
  });

  it('uses the documented approximation when nothing is configured', async () => {
    const c = await loadTokenCounter(undefined);
    expect(c.source).toBe('approximate');
    // hello → 2 pieces of ≤4 chars, "," → 1, world → 2, "!" → 1
    expect(c.count('Hello, world!')).toBe(6);
    const text = 'Spanske Syge, 1918 🎉';
    const offsets = c.offsets(text);
    expect(offsets.length).toBe(c.count(text));
    expect(offsets.map(([s, e]) => text.slice(s, e))).toEqual(['Span', 'ske', 'Syge', ',', '1918', '🎉']);
    expect(await loadTokenCounter('  ')).toMatchObject({ source: 'approximate' });
  });

  it('falls back from EMBEDDING_MODEL to the approximation with a warning, but not from TOKENIZER_MODEL', async () => {
    const served = await chooseTokenCounter({ embeddingModel: 'intfloat/multilingual-e5-large' });
    expect(served.counter.source).toBe('approximate');
    expect(served.warning).toMatch(/not a local path.*estimated/);
    await expect(chooseTokenCounter({ tokenizerModel: 'intfloat/multilingual-e5-large' })).rejects.toThrow(
      TokenizerUnavailableError,
    );
    const local = await chooseTokenCounter({ tokenizerModel: undefined, embeddingModel: dirname(MINILM) });
    try {
      expect(local.counter.source).toBe(MINILM);
      expect(local.warning).toBeUndefined();
    } finally {
      await local.counter.close?.();
    }
    expect((await chooseTokenCounter({})).counter.source).toBe('approximate');
  });
});
