import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainlyEnglish } from '../../src/embed/bm25/analysis.js';
import { detectLanguages, toIso6391, toIso6393 } from '../../src/extract/languages.js';
import { DANISH_CORPUS } from '../fixtures/index.js';

const chapters = readdirSync(DANISH_CORPUS)
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => readFileSync(join(DANISH_CORPUS, f), 'utf8'));

/** English technical prose of the kind SciFact holds (tinyld's heavy model read some as Danish or Dutch). */
const ENGLISH = [
  'Loss of fibronectin from the aged stem cell niche affects the regenerative capacity of skeletal muscle in mice.',
  'Age-related changes in the niche have long been postulated to impair the function of somatic stem cells.',
  'Glioblastomas are deadly cancers that display a functional cellular hierarchy maintained by self-renewing',
  'glioblastoma stem cells. We found that targeting A20 decreased glioma stem cell survival and tumor growth.',
].join(' ');

describe('detectLanguages', () => {
  it('reads every Danish chapter of the fixture textbook as Danish only', () => {
    expect(chapters.length).toBeGreaterThan(0);
    for (const text of chapters) expect(detectLanguages(text)).toEqual(['da']);
  });

  it('reads English technical prose as English', () => {
    expect(detectLanguages(ENGLISH)).toEqual(['en']);
  });

  it('reports both languages of a document that is half Danish, half English', () => {
    const danish = chapters.join('\n\n').slice(0, 10_000);
    const english = `${ENGLISH}\n\n`
      .repeat(Math.ceil(danish.length / ENGLISH.length))
      .slice(0, danish.length);
    expect(detectLanguages(`${danish}\n\n${english}`).sort()).toEqual(['da', 'en']);
  });

  it('reads languages that share English or Danish stop words as themselves, not as English or Danish', () => {
    // Portuguese shares "a" and "do" with English's stop words, Swedish and Norwegian many of Danish's:
    // only a plainly English text skips the detector (plainlyEnglish).
    const other: Record<string, string> = {
      pt: 'A República Federativa do Brasil, formada pela união indissolúvel dos Estados e Municípios e do Distrito Federal, constitui-se em Estado Democrático de Direito e tem como fundamentos a soberania, a cidadania, a dignidade da pessoa humana.',
      sv: 'Sverige är en konstitutionell monarki med ett parlamentariskt styrelseskick. All offentlig makt i Sverige utgår från folket. Den svenska folkstyrelsen bygger på fri åsiktsbildning och på allmän och lika rösträtt. Det är en stad som har många människor och de bor i stora hus.',
      no: 'Kongeriket Norge er et fritt, selvstendig, udelelig og uavhendelig rike. Dets regjeringsform er innskrenket og arvelig monarki. Verdigrunnlaget forblir vår kristne og humanistiske arv. Det er en by som har mange mennesker og de bor i store hus ved havet.',
      de: 'Die Bundesrepublik Deutschland ist ein demokratischer und sozialer Bundesstaat. Alle Staatsgewalt geht vom Volke aus. Sie wird vom Volke in Wahlen und Abstimmungen und durch besondere Organe der Gesetzgebung, der vollziehenden Gewalt und der Rechtsprechung ausgeübt. In der Stadt gibt es so viele Menschen an einem Tag.',
      nl: 'Het Koninkrijk der Nederlanden is een constitutionele monarchie met een parlementair stelsel. De koning is het staatshoofd, maar de regering is verantwoordelijk. Het parlement bestaat uit twee kamers. In Amsterdam is het altijd druk en de mensen fietsen veel.',
    };
    for (const [code, text] of Object.entries(other))
      expect([code, detectLanguages(text)]).toEqual([code, [code]]);
  });

  it('leaves to the detector a text whose words do not plainly show English (a list of names)', () => {
    expect(plainlyEnglish(ENGLISH)).toBe(true);
    expect(
      plainlyEnglish(
        'Aarhus Odense Aalborg Esbjerg Randers Kolding Horsens Vejle Roskilde Herning '.repeat(3),
      ),
    ).toBe(false);
  });

  it('reports nothing for text with no letters to read', () => {
    expect(detectLanguages('')).toEqual([]);
    expect(detectLanguages('| 1 | 2 |\n|---|---|\n| 3 | 4 |')).toEqual([]);
  });
});

describe('ISO 639 codes', () => {
  it('maps 639-1 to the 639-3 codes Kreuzberg reports, and leaves an unknown code as it is', () => {
    expect(['en', 'da', 'de', 'zh', 'fa', 'no', 'ar', 'ko', 'eu', 'yo'].map(toIso6393)).toEqual([
      'eng',
      'dan',
      'deu',
      'cmn',
      'pes',
      'nob',
      'ara',
      'kor',
      'eus',
      'yor',
    ]);
    expect(toIso6393('qq')).toBe('qq');
  });

  it('maps 639-3 back, beyond its table through the CLDR aliases', () => {
    expect(['cmn', 'pes', 'lvs', 'tgl', 'fil', 'cat', 'swe', 'hrv', 'heb', 'ind'].map(toIso6391)).toEqual([
      'zh',
      'fa',
      'lv',
      'tl',
      undefined,
      'ca',
      'sv',
      'hr',
      'he',
      'id',
    ]);
    // Every code of the table goes there and back, but Bokmål's `nob`, which is `nb`.
    for (const one of ['en', 'da', 'zh', 'fa', 'lv', 'ar', 'ja', 'yo', 'sq', 'ms'])
      expect(toIso6391(toIso6393(one))).toBe(one);
    expect(toIso6391(toIso6393('no'))).toBe('nb');
  });
});
