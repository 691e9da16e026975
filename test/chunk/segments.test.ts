import { describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../../src/chunk/approx-counter.js';
import type { Chunk } from '../../src/chunk/chunker.js';
import { createChunker } from '../../src/chunk/create-chunker.js';
import { documentSegments, segmentPages, segmentSpans } from '../../src/chunk/segments.js';
import type { ExtractedDocument, PageSpan } from '../../src/extract/extractor.js';

const words = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag}${i} municipal rule text`).join(' ');

/** A Markdown document of nested sections, every heading followed by body text. */
function handbook(sections: number): string {
  const out: string[] = [`Preface before any heading. ${words(20, 'pre')}`];
  for (let i = 0; i < sections; i++) {
    out.push(`# Part ${i}`, words(30, `p${i}x`));
    out.push(`## Chapter ${i}.1`, words(40, `c${i}y`), words(25, `c${i}z`));
    out.push(`### Section ${i}.1.1`, words(35, `s${i}w`));
  }
  return out.join('\n\n');
}

function doc(text: string, pages?: PageSpan[]): ExtractedDocument {
  return { text, ...(pages ? { pages } : {}), metadata: { languages: [], mime_type: 'text/markdown' } };
}

describe('segmentSpans', () => {
  it('leaves a text no longer than the limit whole', () => {
    expect(segmentSpans('short text', 100)).toEqual([{ start: 0, end: 10 }]);
  });

  it('covers a long text contiguously, each segment within the limit, cut before headings', () => {
    const text = handbook(40);
    const segments = segmentSpans(text, 4000);
    expect(segments.length).toBeGreaterThan(5);
    expect(segments[0]!.start).toBe(0);
    expect(segments.at(-1)!.end).toBe(text.length);
    for (const [i, s] of segments.entries()) {
      expect(s.end - s.start).toBeLessThanOrEqual(4000);
      if (i > 0) {
        expect(s.start).toBe(segments[i - 1]!.end);
        expect(text.slice(s.start)).toMatch(/^#{1,6} /);
      }
    }
  });

  it('falls back to a blank line, a line break, a space, then a hard cut', () => {
    const paragraphs = Array.from({ length: 50 }, (_, i) => words(8, `w${i}`)).join('\n\n');
    for (const s of segmentSpans(paragraphs, 1000).slice(1)) {
      expect(paragraphs.slice(s.start - 2, s.start)).toBe('\n\n');
    }
    const oneLine = words(400, 'x');
    for (const s of segmentSpans(oneLine, 1000).slice(1)) expect(oneLine[s.start - 1]).toBe(' ');
    const solid = 'a'.repeat(2500);
    expect(segmentSpans(solid, 1000)).toEqual([
      { start: 0, end: 1000 },
      { start: 1000, end: 2000 },
      { start: 2000, end: 2500 },
    ]);
  });
});

describe('segmentPages', () => {
  it('clips the page spans to the segment and moves them to its offsets', () => {
    const pages = [
      { page: 1, start: 0, end: 100 },
      { page: 2, start: 100, end: 250 },
      { page: 3, start: 250, end: 400 },
    ];
    expect(segmentPages(pages, { start: 80, end: 260 })).toEqual([
      { page: 1, start: 0, end: 20 },
      { page: 2, start: 20, end: 170 },
      { page: 3, start: 170, end: 180 },
    ]);
    expect(segmentPages(undefined, { start: 0, end: 10 })).toBeUndefined();
  });
});

describe('chunking a long document segment by segment', () => {
  const counter = approximateTokenCounter();

  function segmented(mode: 'markdown' | 'token', text: string, maxChars: number, pages?: PageSpan[]) {
    const chunker = createChunker({ mode, size: 120, overlap: 20 }, counter);
    const out: Chunk[] = [];
    for (const { segment, input } of documentSegments(text, pages, maxChars)) {
      const { outer, ...rest } = input;
      for (const c of chunker.chunk({ ...doc(rest.text, rest.pages) }, outer)) {
        out.push({ ...c, char_start: c.char_start + segment.start, char_end: c.char_end + segment.start });
      }
    }
    return out;
  }

  it('markdown: cuts before headings give the same chunks and breadcrumbs as the whole text', () => {
    const text = handbook(30);
    const whole = createChunker({ mode: 'markdown', size: 120, overlap: 20 }, counter).chunk(doc(text));
    const parts = segmented('markdown', text, 6000);
    expect(documentSegments(text, undefined, 6000).length).toBeGreaterThan(5);
    expect(parts).toEqual(whole);
    expect(parts.some((c) => c.headers?.length === 3)).toBe(true);
  });

  it('token: every chunk is the text at its offsets, pages follow, no chunk spans a cut', () => {
    const text = handbook(30);
    const pages: PageSpan[] = [];
    for (let p = 0; p * 1000 < text.length; p++)
      pages.push({ page: p + 1, start: p * 1000, end: Math.min(text.length, (p + 1) * 1000) });
    const segments = segmentSpans(text, 3000);
    const parts = segmented('token', text, 3000, pages);
    expect(parts.length).toBeGreaterThan(10);
    for (const c of parts) {
      expect(c.content).toBe(text.slice(c.char_start, c.char_end));
      const first = Math.floor(c.char_start / 1000) + 1;
      expect(c.pages?.[0]).toBe(first);
      expect(segments.some((s) => s.start <= c.char_start && c.char_end <= s.end)).toBe(true);
    }
  });
});
