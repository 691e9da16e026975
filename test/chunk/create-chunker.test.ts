import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Chunk, TokenCounter } from '../../src/chunk/chunker.js';
import { createChunker } from '../../src/chunk/create-chunker.js';
import { loadTokenCounter } from '../../src/chunk/tokenizer.js';
import { CHUNK_MODES } from '../../src/config/chunking.js';
import type { ExtractedDocument, PageSpan } from '../../src/extract/extractor.js';
import { DANISH_CORPUS, TOKENIZER } from '../fixtures/index.js';

const MINILM = TOKENIZER;
const CORPUS = DANISH_CORPUS;

const doc = (text: string, pages?: PageSpan[]): ExtractedDocument => ({
  text,
  ...(pages ? { pages } : {}),
  metadata: { languages: ['da'], mime_type: 'text/markdown' },
});
const chapter = (name: string) => readFileSync(join(CORPUS, name), 'utf8');

/** Every chunk's content is (or ends with) its exact slice of the text, never blank. */
function expectFaithful(text: string, chunks: Chunk[]) {
  expect(chunks.length).toBeGreaterThan(0);
  for (const c of chunks) {
    const slice = text.slice(c.char_start, c.char_end);
    expect(slice.trim()).toBe(slice);
    expect(slice).not.toBe('');
    expect(c.content.endsWith(slice)).toBe(true);
  }
}

let minilm: TokenCounter;
let approx: TokenCounter;
beforeAll(async () => {
  minilm = await loadTokenCounter(MINILM);
  approx = await loadTokenCounter(undefined);
});
afterAll(async () => {
  await minilm.close?.();
});

describe('token mode', () => {
  it('cuts windows of at most `size` tokens that overlap and cover every token', () => {
    const text = chapter('1.9.md');
    const chunks = createChunker({ mode: 'token', size: 120, overlap: 30 }, minilm).chunk(doc(text));
    expectFaithful(text, chunks);
    for (const c of chunks) {
      expect(c.content).toBe(text.slice(c.char_start, c.char_end));
      expect(minilm.count(c.content)).toBeLessThanOrEqual(120);
      expect(c.headers).toBeUndefined();
    }
    for (let i = 1; i < chunks.length; i++) {
      const prev = chunks[i - 1]!;
      const cur = chunks[i]!;
      expect(cur.char_start).toBeGreaterThan(prev.char_start);
      expect(cur.char_start).toBeLessThan(prev.char_end); // overlapping
      expect(minilm.count(text.slice(cur.char_start, prev.char_end))).toBeLessThanOrEqual(30 + 1);
    }
    // Every token of the text lies inside some chunk.
    for (const [s, e] of minilm.offsets(text)) {
      expect(chunks.some((c) => c.char_start <= s && e <= c.char_end)).toBe(true);
    }
  });

  it('prefers to end chunks at sentence ends over filling the budget', () => {
    // Each sentence is 6 tokens (this | is | sentence | N | here | .); a 20-token budget fits three whole sentences.
    const text = Array.from({ length: 12 }, (_, i) => `This is sentence ${i} here.`).join(' ');
    const chunks = createChunker({ mode: 'token', size: 20, overlap: 0 }, minilm).chunk(doc(text));
    expect(chunks.map((c) => minilm.count(c.content))).toEqual([18, 18, 18, 18]);
    for (const c of chunks) expect(c.content).toMatch(/^This is sentence \d+ here\..*\.$/);
  });

  it('ends a chunk before a heading rather than right after it', () => {
    const text = chapter('1.9.md');
    const chunks = createChunker({ mode: 'token', size: 200, overlap: 0 }, minilm).chunk(doc(text));
    const endingInHeading = chunks.filter((c) => /(^|\n)#+ [^\n]*$/.test(c.content));
    expect(endingInHeading).toEqual([]);
    expect(chunks.filter((c) => c.content.startsWith('## ')).length).toBeGreaterThan(0);
  });

  it('starts an overlapping chunk at a sentence start inside the overlap', () => {
    const text = Array.from({ length: 12 }, (_, i) => `This is sentence ${i} here.`).join(' ');
    const chunks = createChunker({ mode: 'token', size: 20, overlap: 8 }, minilm).chunk(doc(text));
    expect(chunks.length).toBeGreaterThan(4);
    for (const c of chunks) expect(c.content).toMatch(/^This is sentence \d+ here\./);
    // Each successor repeats exactly the previous chunk's last sentence (6 tokens <= 8).
    for (let i = 1; i < chunks.length; i++) {
      const shared = text.slice(chunks[i]!.char_start, chunks[i - 1]!.char_end);
      expect(shared).toMatch(/^This is sentence \d+ here\.$/);
    }
  });

  it('keeps prefix + special tokens + chunk within the model limit', () => {
    const text = chapter('1.9.md');
    const prefixTokens = minilm.count('passage: ');
    const chunks = createChunker(
      { mode: 'token', size: 400, overlap: 80, prefixTokens, maxTokens: 128 },
      minilm,
    ).chunk(doc(text));
    expectFaithful(text, chunks);
    const worst = Math.max(...chunks.map((c) => minilm.count(`passage: ${c.content}`) + 2));
    expect(worst).toBeLessThanOrEqual(128);
    expect(worst).toBeGreaterThan(100); // the budget is used, not wasted
  });
});

describe('markdown mode', () => {
  it('records the breadcrumb of "1.9.2 Den Spanske Syge" and starts its chunk with the heading', () => {
    const text = chapter('1.9.md');
    const chunks = createChunker({ mode: 'markdown', size: 400, overlap: 80 }, minilm).chunk(doc(text));
    expectFaithful(text, chunks);
    const syge = chunks.filter((c) => c.headers?.at(-1) === '1.9.2 Den Spanske Syge');
    expect(syge.length).toBeGreaterThan(0);
    expect(syge[0]!.headers).toEqual([
      '1.9 Verdenskrig, kriser og socialreformer (1914-40)',
      '1.9.2 Den Spanske Syge',
    ]);
    expect(syge[0]!.content.startsWith('## 1.9.2 Den Spanske Syge\nI 1918 og 1919 spredte')).toBe(true);
    // Continuation chunks repeat the heading line in their content, not in their offsets.
    for (const c of syge.slice(1)) {
      expect(c.content.startsWith('## 1.9.2 Den Spanske Syge\n\n')).toBe(true);
      expect(text.slice(c.char_start, c.char_end).startsWith('##')).toBe(false);
    }
    const sectionStart = text.indexOf('## 1.9.2');
    const sectionEnd = text.indexOf('## 1.9.3');
    for (const c of syge) {
      expect(c.char_start).toBeGreaterThanOrEqual(sectionStart);
      expect(c.char_end).toBeLessThanOrEqual(sectionEnd);
      expect(minilm.count(c.content)).toBeLessThanOrEqual(400);
    }
    // The whole section's text is covered.
    const covered = syge.map((c) => text.slice(c.char_start, c.char_end)).join(' ');
    expect(covered).toContain('forlystelser lukkede ned');
  });

  it('finds the breadcrumb in the corpus with the offline approximation too', () => {
    const chunker = createChunker({ mode: 'markdown', size: 400, overlap: 80 }, approx);
    const hits = readdirSync(CORPUS)
      .filter((f) => f.endsWith('.md'))
      .flatMap((f) => chunker.chunk(doc(chapter(f))))
      .filter((c) => c.headers?.at(-1) === '1.9.2 Den Spanske Syge');
    expect(hits.length).toBeGreaterThan(0);
    expect(hits[0]!.content).toContain('Den Spanske Syge');
  });

  it('packs paragraphs up to size, splits an oversized one and overlaps only inside a section', () => {
    const para = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word} ${i}.`).join(' ');
    const text = [
      '# Top',
      '',
      '## A',
      para(5, 'Alpha'),
      '',
      para(5, 'Beta'),
      '',
      '## B',
      para(60, 'Gamma'), // one long paragraph: ~240 tokens
      '',
      '## C',
      'Short.',
    ].join('\n');
    const chunks = createChunker({ mode: 'markdown', size: 50, overlap: 10 }, minilm).chunk(doc(text));
    expectFaithful(text, chunks);
    const a = chunks.filter((c) => c.headers?.at(-1) === 'A');
    const b = chunks.filter((c) => c.headers?.at(-1) === 'B');
    // The heading-only parent joins its first child's chunk; both short paragraphs pack into it.
    expect(a).toHaveLength(1);
    expect(a[0]!.content).toBe(text.slice(0, text.indexOf('\n\n## B')));
    expect(a[0]!.headers).toEqual(['Top', 'A']);
    expect(b.length).toBeGreaterThanOrEqual(5);
    for (const c of b) expect(minilm.count(c.content)).toBeLessThanOrEqual(50);
    for (let i = 1; i < b.length; i++) expect(b[i]!.char_start).toBeLessThan(b[i - 1]!.char_end);
    const c = chunks.at(-1)!;
    expect(c.headers).toEqual(['Top', 'C']);
    expect(c.content).toBe('## C\nShort.');
    expect(c.char_start).toBeGreaterThanOrEqual(b.at(-1)!.char_end);
  });
});

describe('markdown mode: short paragraphs before one that must be cut', () => {
  it('keeps a title line with the first window of the long paragraph after it, not in a chunk of its own', () => {
    const title = 'Microstructural development of white matter assessed by diffusion imaging.';
    const body = Array.from(
      { length: 40 },
      (_, i) => `Sentence ${i} of the abstract reports a measured value.`,
    ).join(' ');
    const text = `${title}\n\n${body}\n`;
    const chunks = createChunker({ mode: 'markdown', size: 120, overlap: 20 }, minilm).chunk(doc(text));
    expectFaithful(text, chunks);
    expect(chunks.some((c) => c.content === title)).toBe(false);
    expect(chunks[0]!.content.startsWith(`${title}\n\nSentence 0`)).toBe(true);
    for (const c of chunks) expect(minilm.count(c.content)).toBeLessThanOrEqual(120);
    // The whole text is covered, and no more chunks than the windows need.
    expect(chunks.at(-1)!.char_end).toBe(text.trimEnd().length);
  });

  it('still packs short paragraphs on their own when the next one fits a chunk alone', () => {
    const first = 'Short lead paragraph.';
    const second = 'word '.repeat(118).trim();
    const chunks = createChunker({ mode: 'markdown', size: 120, overlap: 0 }, minilm).chunk(
      doc(`${first}\n\n${second}`),
    );
    expect(chunks.map((c) => c.content)).toEqual([first, second]);
  });
});

describe('word, sentence and passage modes', () => {
  const text = 'Et to tre. Fire fem seks! Syv otte?\n\nNi ti elleve.\n\n\n\nTolv tretten.';

  it('word: size and overlap in words', () => {
    const chunks = createChunker({ mode: 'word', size: 4, overlap: 1 }, approx).chunk(doc(text));
    expectFaithful(text, chunks);
    expect(chunks.map((c) => c.content)).toEqual([
      'Et to tre. Fire',
      'Fire fem seks! Syv',
      'Syv otte?\n\nNi ti',
      'ti elleve.\n\n\n\nTolv tretten.',
    ]);
  });

  it('sentence: size and overlap in sentences', () => {
    const chunks = createChunker({ mode: 'sentence', size: 2, overlap: 1 }, approx).chunk(doc(text));
    expect(chunks.map((c) => c.content)).toEqual([
      'Et to tre. Fire fem seks!',
      'Fire fem seks! Syv otte?',
      'Syv otte?\n\nNi ti elleve.',
      'Ni ti elleve.\n\n\n\nTolv tretten.',
    ]);
  });

  it('passage: size in blank-line paragraphs', () => {
    const chunks = createChunker({ mode: 'passage', size: 2, overlap: 0 }, approx).chunk(doc(text));
    expect(chunks.map((c) => c.content)).toEqual([
      'Et to tre. Fire fem seks! Syv otte?\n\nNi ti elleve.',
      'Tolv tretten.',
    ]);
  });

  it('cuts a unit-mode chunk that is over the model limit', () => {
    const long = Array.from({ length: 300 }, (_, i) => `ord${i}`).join(' ');
    const chunks = createChunker({ mode: 'passage', size: 1, overlap: 0, maxTokens: 64 }, minilm).chunk(
      doc(long),
    );
    expect(chunks.length).toBeGreaterThan(1);
    expectFaithful(long, chunks);
    for (const c of chunks) expect(minilm.count(c.content) + 2).toBeLessThanOrEqual(64);
  });
});

describe('every mode', () => {
  it('never exceeds the model limit on the whole textbook (MiniLM tokenizer)', () => {
    const prefixTokens = minilm.count('passage: ');
    // A quarter of the chapters keeps this test quick; the bench runs them all.
    const docs = readdirSync(CORPUS)
      .filter((f) => f.endsWith('.md'))
      .sort()
      .filter((_, i) => i % 4 === 0)
      .map((f) => doc(chapter(f)));
    for (const mode of CHUNK_MODES) {
      const size = mode === 'sentence' ? 10 : mode === 'passage' ? 3 : 400;
      const chunker = createChunker({ mode, size, overlap: 1, prefixTokens, maxTokens: 256 }, minilm);
      const chunks = docs.flatMap((d) => chunker.chunk(d));
      const counts = minilm.countMany!(chunks.map((c) => c.content));
      expect(Math.max(...counts) + prefixTokens + 2, mode).toBeLessThanOrEqual(256);
    }
  });

  it('maps chunks to the pages they touch', () => {
    const pageTexts = [
      'Side et handler om kongen. ',
      'Side to handler om folket. ',
      'Side tre handler om loven.',
    ];
    const pages: PageSpan[] = [];
    let text = '';
    for (const [i, t] of pageTexts.entries()) {
      pages.push({ page: i + 1, start: text.length, end: text.length + t.length });
      text += t;
    }
    const chunks = createChunker({ mode: 'word', size: 7, overlap: 0 }, approx).chunk(doc(text, pages));
    expect(chunks.map((c) => [c.content, c.pages])).toEqual([
      ['Side et handler om kongen. Side to', [1, 2]],
      ['handler om folket. Side tre handler om', [2, 3]],
      ['loven.', [3]],
    ]);
    const noPages = createChunker({ mode: 'word', size: 7, overlap: 0 }, approx).chunk(doc(text));
    expect(noPages[0]!.pages).toBeUndefined();
  });

  it.each(CHUNK_MODES)('%s: emits nothing for blank text and no blank chunks', (mode) => {
    const chunker = createChunker({ mode, size: 3, overlap: 1 }, approx);
    expect(chunker.mode).toBe(mode);
    expect(chunker.chunk(doc(' \n\n\t  \n'))).toEqual([]);
    const text = '\n\n  # H\n\n\n\nEn. To. Tre.\n\n   \n\nFire fem seks syv.\n\n';
    const chunks = chunker.chunk(doc(text));
    expectFaithful(text, chunks);
  });

  it('rejects settings that cannot produce valid chunks', () => {
    expect(() => createChunker({ mode: 'token', size: 100, overlap: 100 }, approx)).toThrow(/overlap/);
    expect(() => createChunker({ mode: 'word', size: 0, overlap: 0 }, approx)).toThrow(/size/);
    expect(() =>
      createChunker({ mode: 'token', size: 400, overlap: 0, prefixTokens: 10, maxTokens: 16 }, minilm),
    ).toThrow(/model limit of 16 tokens/);
  });
});
