import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  contextualText,
  LexicalAnalyzer,
  lexicalLanguageOf,
  stopWordLanguage,
  withoutQuestionWords,
} from '../../../src/embed/bm25/analysis.js';
import { Bm25Encoder } from '../../../src/embed/bm25/encoder.js';
import { DANISH_CORPUS } from '../../fixtures/index.js';

const english = new Bm25Encoder({ language: 'english' });
const danish = new Bm25Encoder({ language: 'danish' });

const ENGLISH_TEXT =
  'Loss of fibronectin from the aged stem cell niche affects the regenerative capacity of skeletal muscle in mice. Age-related changes in the niche have long been postulated to impair the function of somatic stem cells.';
const DANISH_TEXT =
  'Danmark og Norge blev angrebet og besat af det tyske militær den 9. april 1940. Den tyske forklaring var, at Tyskland ville beskytte de to lande mod britisk besættelse, men det skyldtes især interessen for Norge.';

describe('lexicalLanguageOf: the language a chunk is analysed in', () => {
  it('is the first detected language Kilde can stem, else the fallback', () => {
    expect(lexicalLanguageOf(['de', 'da', 'en'], 'english')).toBe('danish');
    expect(lexicalLanguageOf(['en'], 'danish')).toBe('english');
    expect(lexicalLanguageOf(['fr'], 'danish')).toBe('danish');
    expect(lexicalLanguageOf(undefined, 'english')).toBe('english');
  });

  it('follows the stop words where they show the language clearly (detection misreads some)', () => {
    // tinyld reads this abstract (SciFact 19912367) as Danish.
    expect(stopWordLanguage(ENGLISH_TEXT)).toBe('english');
    expect(lexicalLanguageOf(['da'], 'danish', ENGLISH_TEXT)).toBe('english');
    expect(stopWordLanguage(DANISH_TEXT)).toBe('danish');
    expect(lexicalLanguageOf(['no'], 'english', DANISH_TEXT)).toBe('danish');
    // Too short, or no running text: the detected language decides.
    expect(stopWordLanguage('Tabel 1. Befolkning')).toBeUndefined();
    expect(stopWordLanguage('Copenhagen Aarhus Odense Aalborg '.repeat(10))).toBeUndefined();
    expect(lexicalLanguageOf(['da'], 'english', 'Tabel 1. Befolkning')).toBe('danish');
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

  it('documentTerms: the terms of document, in both languages, without a vector', () => {
    for (const text of ['Danmark kæmpede mod Sverige under krigen', 'The cats are running over the hills']) {
      for (const language of ['danish', 'english'] as const) {
        expect(analyzer.documentTerms(text, language)).toEqual(analyzer.document(text, language).terms);
      }
    }
    expect(analyzer.documentTerms('Danmark kæmpede mod Sverige', 'danish')).toContain('mod');
    expect(analyzer.documentTerms('The cats are running', 'english')).toEqual(['cat', 'run']);
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

  it('query: in several languages, the stop words of a language that drops them are left out of every analysis', () => {
    const q = analyzer.query('the cells of the liver', ['english', 'danish']);
    expect(q.terms).not.toContain('the');
    expect(q.terms).not.toContain('of');
    expect(q.terms).toEqual(['cell', 'liver', 'cel', 'liv']);
  });

  it('query: Danish question words are left out; the vector is fastembed’s of the rewritten text', () => {
    const q = analyzer.query('Hvilken konge byggede Rundetårn?', ['danish']);
    expect(q.sparse).toEqual(danish.encodeQuery(' konge byggede Rundetårn?'));
    expect(q.terms).not.toContain('hvilk');
    expect(withoutQuestionWords('Hvem? Hvornår?', 'danish')).toBe('Hvem? Hvornår?');
    expect(withoutQuestionWords('Hvilket af følgende partier', 'danish')).toBe('  af   partier');
    expect(withoutQuestionWords('Hvad hedder partiet, og hvor ligger det?', 'danish')).toBe(
      '  hedder partiet, og   ligger det?',
    );
    expect(withoutQuestionWords('Which party?', 'english')).toBe('Which party?');
  });
});

describe('LexicalAnalyzer.chunk: a stored chunk analysed from one reading of its words', () => {
  const analyzer = new LexicalAnalyzer('english');
  const chapters = readdirSync(DANISH_CORPUS)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => readFileSync(join(DANISH_CORPUS, f), 'utf8'));
  // Chunk-sized pieces of the Danish chapters, English prose, text with no stop words, Greek with
  // its final sigma next to marks and apostrophes, words hyphenated over a line break, a chunk
  // longer than the stop-word check reads, and a Turkish capital İ.
  const contents = [
    ...chapters.flatMap((c) =>
      Array.from({ length: Math.ceil(c.length / 1500) }, (_, i) => c.slice(i * 1500, i * 1500 + 1700)),
    ),
    ENGLISH_TEXT,
    DANISH_TEXT,
    `${ENGLISH_TEXT} ${DANISH_TEXT}`,
    'Tabel 1. Befolkning 2020 2021 2022',
    "ΟΔΟΣ'Σ ΑΣ\u0301Σ σοφίας ΚΑΛΟΣ. The road of wisdom and the end of the road, which is the start of the ways.",
    `Tysklands besæt-\ntelse af Nord-\nSlesvig og EU-landene. ${DANISH_TEXT}`,
    `${ENGLISH_TEXT} `.repeat(30),
    `${DANISH_TEXT} `.repeat(30),
    `İstanbul and the İzmir coast: ${ENGLISH_TEXT}`,
  ];
  const contexts = [
    {},
    { title: 'Danmarks historie' },
    { title: 'Stem cells', headers: ['Methods', 'Muscle'] },
  ];
  const languageLists = [undefined, ['da'], ['en'], ['no', 'de'], []];

  it('gives the terms and vector of document(contextualText, lexicalLanguageOf) for every chunk', () => {
    let n = 0;
    for (const content of contents) {
      for (const context of contexts) {
        for (const languages of languageLists) {
          for (const fallback of ['english', 'danish'] as const) {
            const text = contextualText(content, context);
            const language = lexicalLanguageOf(languages, fallback, content);
            const expected = analyzer.document(text, language);
            expect(analyzer.chunk(content, context, languages, fallback, true)).toEqual(expected);
            expect(analyzer.chunk(content, context, languages, fallback, false)).toEqual({
              terms: analyzer.documentTerms(text, language),
            });
            n++;
          }
        }
      }
    }
    expect(chapters.length).toBeGreaterThan(0);
    expect(n).toBe(contents.length * contexts.length * languageLists.length * 2);
  });

  it('may read words before or after lower-casing: no character outside [\\p{L}\\p{N}_] lower-cases into one', () => {
    const word = /[\p{L}\p{N}_]/u;
    const found: number[] = [];
    for (let c = 0; c <= 0x10ffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const s = String.fromCodePoint(c);
      if (!word.test(s) && word.test(s.toLowerCase())) found.push(c);
    }
    expect(found).toEqual([]);
  });
});
