import { describe, expect, it } from 'vitest';
import { markdownSections } from '../../src/chunk/markdown-sections.js';
import { paragraphSpans, type Span, sentenceSpans, wordSpans } from '../../src/chunk/sentences.js';

const texts = (text: string, spans: Span[]) => spans.map(([s, e]) => text.slice(s, e));

describe('sentenceSpans', () => {
  it('splits Danish prose, keeping abbreviations, ordinals, decimals and thousands together', () => {
    const text =
      'I 1914 brød 1. Verdenskrig ud. Cirka 6.000 danske sønderjyder døde, bl.a. Hans Jensen. ' +
      'Prisen var ca. 25 mio. kr. til gengæld for øerne (på engelsk Sct. John). ' +
      'Det skete den 5. juni 1849! Hvorfor? Fordi f.eks. Grundloven… Den gælder stadig.';
    expect(texts(text, sentenceSpans(text))).toEqual([
      'I 1914 brød 1. Verdenskrig ud.',
      'Cirka 6.000 danske sønderjyder døde, bl.a. Hans Jensen.',
      'Prisen var ca. 25 mio. kr. til gengæld for øerne (på engelsk Sct. John).',
      'Det skete den 5. juni 1849!',
      'Hvorfor?',
      'Fordi f.eks. Grundloven…',
      'Den gælder stadig.',
    ]);
  });

  it('handles English abbreviations, initials, decimals and closing quotes', () => {
    const text =
      'Dr. Smith paid $3.50 to J. R. Tolkien, e.g. for books. "It was fine." She left. The U.S. Army came.';
    expect(texts(text, sentenceSpans(text))).toEqual([
      'Dr. Smith paid $3.50 to J. R. Tolkien, e.g. for books.',
      '"It was fine."',
      'She left.',
      'The U.S. Army came.',
    ]);
  });

  it('breaks after a year ending a sentence but not inside hard-wrapped lines', () => {
    const text = 'Slesvig gik tabt i 1864. Derefter\nfulgte en lang\nperiode med fred.';
    expect(texts(text, sentenceSpans(text))).toEqual([
      'Slesvig gik tabt i 1864.',
      'Derefter\nfulgte en lang\nperiode med fred.',
    ]);
  });

  it('treats blank lines, headings and list items as boundaries', () => {
    const text =
      '## 1.9.2 Den Spanske Syge\nHen mod slutningen\naf krigen\n\nNy afsnit uden punktum\n- punkt et\n- punkt to';
    expect(texts(text, sentenceSpans(text))).toEqual([
      '## 1.9.2 Den Spanske Syge',
      'Hen mod slutningen\naf krigen',
      'Ny afsnit uden punktum',
      '- punkt et',
      '- punkt to',
    ]);
  });

  it('respects a sub-range and returns absolute offsets', () => {
    const text = 'Skip this. Take one. Take two. Not this.';
    const from = text.indexOf('Take');
    const to = text.indexOf('Not') - 1;
    expect(texts(text, sentenceSpans(text, from, to))).toEqual(['Take one.', 'Take two.']);
  });
});

describe('wordSpans and paragraphSpans', () => {
  it('words are whitespace separated', () => {
    const text = '  Den\tSpanske  Syge,\n1918 ';
    expect(texts(text, wordSpans(text))).toEqual(['Den', 'Spanske', 'Syge,', '1918']);
  });

  it('paragraphs are blank-line separated and keep fenced code whole', () => {
    const text = 'Første afsnit\nfortsætter.\n\n  \nAndet afsnit.\n\n```\ncode\n\nmore code\n```\n\nSidste.';
    expect(texts(text, paragraphSpans(text))).toEqual([
      'Første afsnit\nfortsætter.',
      'Andet afsnit.',
      '```\ncode\n\nmore code\n```',
      'Sidste.',
    ]);
  });
});

describe('markdownSections', () => {
  it('builds breadcrumbs from ATX headings and ignores # inside fenced code', () => {
    const text = [
      'Preamble text.',
      '# Part 1',
      '## 1.1 Intro ##',
      'Body one.',
      '```python',
      '# not a heading',
      '```',
      '### 1.1.1 Detail',
      'Body two.',
      '## 1.2 Next',
      '#hashtag is not a heading',
      '# Part 2',
      'End.',
    ].join('\n');
    const sections = markdownSections(text);
    expect(sections.map((s) => s.headers)).toEqual([
      [],
      ['Part 1'],
      ['Part 1', '1.1 Intro'],
      ['Part 1', '1.1 Intro', '1.1.1 Detail'],
      ['Part 1', '1.2 Next'],
      ['Part 2'],
    ]);
    expect(sections.map((s) => s.level)).toEqual([0, 1, 2, 3, 2, 1]);
    const intro = sections[2]!;
    expect(text.slice(intro.start, intro.end)).toBe(
      '## 1.1 Intro ##\nBody one.\n```python\n# not a heading\n```\n',
    );
    expect(text.slice(intro.heading![0], intro.heading![1])).toBe('## 1.1 Intro ##');
    // Sections tile the text.
    expect(sections.map((s) => text.slice(s.start, s.end)).join('')).toBe(text);
  });

  it('drops an empty preamble', () => {
    expect(markdownSections('\n\n# Title\ntext').map((s) => s.headers)).toEqual([['Title']]);
  });
});
