import { describe, expect, it } from 'vitest';
import {
  contextualText,
  LexicalAnalyzer,
  lexicalLanguageOf,
  withoutQuestionWords,
} from '../../../src/embed/bm25/analysis.js';
import { Bm25Encoder } from '../../../src/embed/bm25/encoder.js';

const english = new Bm25Encoder({ language: 'english' });
const danish = new Bm25Encoder({ language: 'danish' });

describe('lexicalLanguageOf: the language a document is analysed in', () => {
  it('is the first detected language Kilde can stem, else the fallback', () => {
    expect(lexicalLanguageOf(['de', 'da', 'en'], 'english')).toBe('danish');
    expect(lexicalLanguageOf(['en'], 'danish')).toBe('english');
    expect(lexicalLanguageOf(['fr'], 'danish')).toBe('danish');
    expect(lexicalLanguageOf(undefined, 'english')).toBe('english');
  });
});

describe('contextualText: the contextual chunk header', () => {
  it('puts the title and the breadcrumb above the chunk, outermost first', () => {
    expect(
      contextualText('Jobcentrene drives af kommunerne.', {
        title: 'Medborgerskab',
        headers: ['3 Økonomi', '3.4 Arbejdsmarkedet'],
      }),
    ).toBe('Medborgerskab\n3 Økonomi\n3.4 Arbejdsmarkedet\n\nJobcentrene drives af kommunerne.');
  });

  it('does not repeat a heading the chunk opens with, nor the same line twice', () => {
    const content = '## 1.9.2 Den Spanske Syge\n\nI 1918 ramte influenzaen.';
    expect(
      contextualText(content, {
        title: '1.9 Verdenskrig',
        headers: ['1.9 Verdenskrig', '1.9.2 Den  Spanske Syge'],
      }),
    ).toBe(`1.9 Verdenskrig\n\n${content}`);
    expect(contextualText('Plain.', {})).toBe('Plain.');
  });

  it('joins words hyphenated over a line break, and only those', () => {
    expect(contextualText('Tysklands besæt-\ntelse af Nord-\nSlesvig og EU-landene', {})).toBe(
      'Tysklands besættelse af Nord-\nSlesvig og EU-landene',
    );
  });
});

describe('LexicalAnalyzer', () => {
  const analyzer = new LexicalAnalyzer('english');

  it('document: the sparse vector is fastembed’s for the text, in the document’s language', () => {
    const text = 'Københavns kommune bygger nye boliger til de studerende.';
    expect(analyzer.document(text, 'danish').sparse).toEqual(danish.encodeDocument(text));
    expect(analyzer.document(text, 'english').sparse).toEqual(english.encodeDocument(text));
  });

  it('document: Danish stop words stay in the indexed terms, English ones do not', () => {
    expect(analyzer.document('Danmark kæmpede mod Sverige', 'danish').terms).toEqual([
      'danmark',
      'kæmped',
      'mod',
      'sver',
    ]);
    expect(analyzer.document('The cats are running', 'english').terms).toEqual(['cat', 'run']);
  });

  it('query: one language gives exactly fastembed’s query vector (an index fastembed wrote stays searchable)', () => {
    const text = 'How do cats run, and what is retrieval?';
    expect(analyzer.query(text, ['english']).sparse).toEqual(english.encodeQuery(text));
    expect(analyzer.query(text, []).sparse).toEqual(english.encodeQuery(text));
    expect(analyzer.query('Kommunen bygger boliger', ['danish']).sparse).toEqual(
      danish.encodeQuery('Kommunen bygger boliger'),
    );
  });

  it('query: several languages give the union of their analyses, each term once', () => {
    const q = analyzer.query('boliger running', ['english', 'danish']);
    // English: bolig, run; Danish: bol, running.
    expect(q.terms).toEqual(['bolig', 'run', 'bol', 'running']);
    expect(new Set(q.sparse.indices)).toEqual(
      new Set([
        ...english.encodeQuery('boliger running').indices,
        ...danish.encodeQuery('boliger running').indices,
      ]),
    );
    expect(q.sparse.values.every((v) => v === 1)).toBe(true);
  });

  it('query: Danish question words are left out; the vector is fastembed’s of the rewritten text', () => {
    const q = analyzer.query('Hvilken konge byggede Rundetårn?', ['danish']);
    expect(q.sparse).toEqual(danish.encodeQuery(' konge byggede Rundetårn?'));
    expect(q.terms).not.toContain('hvilk');
    expect(withoutQuestionWords('Hvem? Hvornår?', 'danish')).toBe('Hvem? Hvornår?');
    expect(withoutQuestionWords('Hvilket af følgende partier', 'danish')).toBe('  af   partier');
    expect(withoutQuestionWords('Which party?', 'english')).toBe('Which party?');
  });
});
