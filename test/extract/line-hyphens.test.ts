import { describe, expect, it } from 'vitest';
import { joinDocumentLineHyphens, joinLineHyphens } from '../../src/extract/line-hyphens.js';

const join = (text: string) => joinLineHyphens(text).text;

describe('words hyphenated over a line break', () => {
  it('joins a word whose fragments are no words on their own, in any language', () => {
    expect(join('Tysklands besæt-\ntelse af Danmark')).toBe('Tysklands besættelse af Danmark');
    expect(join('Danmark samarbej-\nde med besættelsesmagten')).toBe(
      'Danmark samarbejde med besættelsesmagten',
    );
    expect(join('the experi-\nment was repeated')).toBe('the experiment was repeated');
    // Spaces and tabs around the break, Windows line ends.
    expect(join('Denne forsvars- \r\n\talliance var ledet af Sovjetunionen')).toBe(
      'Denne forsvarsalliance var ledet af Sovjetunionen',
    );
  });

  it('joins two words when the document writes them joined elsewhere, inflected or not', () => {
    const text = 'Han er i land. Land og folk.\nTysk-\nland ligger mod syd. Tyskland er stort.';
    expect(join(text)).toContain('Tyskland ligger mod syd');
    // "forsvarsalliance" is the start of "forsvarsalliancen": an inflection of the joined word.
    expect(
      join('medlem af forsvarsalliancen. En ny forsvars-\nalliance. Alliance og forsvars styrke.'),
    ).toContain('En ny forsvarsalliance.');
  });

  it('keeps the hyphen of a compound of two words the document never writes joined', () => {
    expect(join('Guld er gult. Hornene er fundet. Guld-\nhornene blev stjålet.')).toContain(
      'Guld-hornene blev stjålet.',
    );
    expect(join('send an e-\nmail to the e-mail address')).toBe('send an e-mail to the e-mail address');
  });

  it('keeps real hyphens: numbers, a capital after the break, a pair written with a hyphen elsewhere', () => {
    expect(join('i 1600-\ntallet')).toBe('i 1600-tallet');
    expect(join('nord for Nord-\nKorea')).toBe('nord for Nord-Korea');
    expect(join('Europa-\nKommissionen foreslår')).toBe('Europa-Kommissionen foreslår');
    expect(join('Warszawa-pagten blev stiftet. Warszawa-\npagten faldt')).toBe(
      'Warszawa-pagten blev stiftet. Warszawa-pagten faldt',
    );
  });

  it('leaves a suspended compound before a conjunction as it is', () => {
    expect(join('fra landbrugs- til videns-\nog servicesamfund')).toBe(
      'fra landbrugs- til videns- og servicesamfund',
    );
    expect(join('12-\nog 15-årige')).toBe('12- og 15-årige');
    expect(join('pre-\nand post-war Europe')).toBe('pre- and post-war Europe');
  });

  it('leaves lines that do not end in a hyphenated word alone', () => {
    const text = '- a list item\n- another\nA dash - \nthen text\n---\nrule';
    expect(join(text)).toBe(text);
  });

  it('moves page spans to the joined text', () => {
    const page1 = 'Side et slutter med besæt-\n';
    const page2 = 'telse af landet.';
    const doc = joinDocumentLineHyphens({
      text: page1 + page2,
      pages: [
        { page: 1, start: 0, end: page1.length },
        { page: 2, start: page1.length, end: page1.length + page2.length },
      ],
      metadata: { languages: ['da'], mime_type: 'application/pdf' },
    });
    expect(doc.text).toBe('Side et slutter med besættelse af landet.');
    expect(doc.pages).toEqual([
      { page: 1, start: 0, end: 'Side et slutter med besæt'.length },
      { page: 2, start: 'Side et slutter med besæt'.length, end: doc.text.length },
    ]);
  });
});
