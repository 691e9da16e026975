import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEld } from '../../src/extract/languages.js';
import { DANISH_CORPUS } from '../fixtures/index.js';

/* eld's table as the build writes it (scripts/eld-table.mjs) gives the detector eld's own module gives. */

const dir = mkdtempSync(join(tmpdir(), 'kilde-eld-table-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const script = fileURLToPath(new URL('../../scripts/eld-table.mjs', import.meta.url));
const texts = [
  ...readdirSync(DANISH_CORPUS)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .slice(0, 6)
    .map((f) => readFileSync(join(DANISH_CORPUS, f), 'utf8').slice(0, 2000)),
  'Loss of fibronectin from the aged stem cell niche affects the regenerative capacity of skeletal muscle in mice.',
  'Die Gemeinde entscheidet über den Antrag innerhalb von vier Wochen nach Eingang der Unterlagen.',
  'La commune statue sur la demande dans un délai de quatre semaines après réception du dossier.',
  'Kommunen afgør ansøgningen inden for fire uger efter modtagelsen af dokumenterne.',
  'Kommunen avgör ansökan inom fyra veckor efter att handlingarna har kommit in.',
];

describe('eld table as JSON', () => {
  it('detects every text with the same language and scores as eld’s own module', () => {
    const out = join(dir, 'eld.json');
    execFileSync(process.execPath, [script, out]);
    const fromJson = loadEld(pathToFileURL(out));
    const fromModule = loadEld(pathToFileURL(join(dir, 'absent.json')));
    for (const text of texts) {
      const a = fromJson.detect(text);
      const b = fromModule.detect(text);
      expect(a.language).toBe(b.language);
      expect(a.getScores()).toEqual(b.getScores());
    }
    expect(fromJson.detect(texts.at(-2)!).language).toBe('da');
  });

  it('uses eld’s own module when the file was written for another eld version', () => {
    const stale = join(dir, 'stale.json');
    writeFileSync(stale, JSON.stringify({ eld: '0.0.0', data: { type: 'XS60', languages: {}, ngrams: {} } }));
    expect(loadEld(pathToFileURL(stale)).detect(texts.at(-2)!).language).toBe('da');
  });
});
