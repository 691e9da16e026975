/**
 * The Snowball English ("Porter2") stemmer, written from the algorithm's published description
 * (snowballstem.org/algorithms/english). Every rule keeps Snowball's exact semantics: a
 * `[substring] among` step picks the longest listed suffix first and only then tests its
 * condition (no fallback to a shorter suffix), and p1/p2 stay absolute positions.
 *
 * Two editions, because they stem differently:
 * - `snowball-2`: the algorithm as it stood until 2023. fastembed stems with `py_rust_stemmers`,
 *   which wraps the `rust-stemmers` 1.2 crate, generated from this edition; BM25 vectors must
 *   use it to match indexes that fastembed wrote.
 * - `snowball-3`: today's algorithm (Snowball 3.x, the reference vocabulary in snowball-data):
 *   more R1 prefixes (past, univers, later, emerg, organ, inter), -ogist -> -og, no undoubling
 *   after a lone a/e/o (added, ebbed, erred), and the -ing/-eed exceptions moved into Step 1b.
 * Input must be lower case, as in fastembed.
 */
import { byLengthDesc, longestSuffix, stemByCodePoints } from './snowball-chars.js';

export type EnglishEdition = 'snowball-2' | 'snowball-3';

const EXCEPTIONS_3 = new Map<string, string>([
  ['skis', 'ski'],
  ['skies', 'sky'],
  ['idly', 'idl'],
  ['gently', 'gentl'],
  ['ugly', 'ugli'],
  ['early', 'earli'],
  ['only', 'onli'],
  ['singly', 'singl'],
  ['sky', 'sky'],
  ['news', 'news'],
  ['howe', 'howe'],
  ['atlas', 'atlas'],
  ['cosmos', 'cosmos'],
  ['bias', 'bias'],
  ['andes', 'andes'],
]);
const EXCEPTIONS_2 = new Map<string, string>([
  ...EXCEPTIONS_3,
  ['dying', 'die'],
  ['lying', 'lie'],
  ['tying', 'tie'],
]);

/** snowball-2 leaves these untouched once Step 1a has run. */
const EXCEPTIONS_AFTER_1A = new Set(
  'inning outing canning herring earring proceed exceed succeed'.split(' '),
);

const isV = (c: string | undefined): boolean =>
  c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u' || c === 'y';
const isVWXY = (c: string | undefined): boolean => isV(c) || c === 'w' || c === 'x' || c === 'Y';
const VALID_LI = new Set('cdeghkmnrt');
const DOUBLES = new Set(['bb', 'dd', 'ff', 'gg', 'mm', 'nn', 'pp', 'rr', 'tt']);

/** Short syllable ending at position `c`. */
function shortV(w: string, c: number, edition: EnglishEdition): boolean {
  if (edition === 'snowball-3' && c >= 4 && w.slice(c - 4, c) === 'past') return true;
  if (c >= 3 && !isVWXY(w[c - 1]) && isV(w[c - 2]) && !isV(w[c - 3])) return true;
  return c === 2 && !isV(w[1]) && isV(w[0]);
}

function hasVowelBefore(w: string, end: number): boolean {
  for (let i = end - 1; i >= 0; i--) if (isV(w[i])) return true;
  return false;
}

/** Position just past the first vowel-then-non-vowel at or after `from`; -1 when none. */
function pastVowelThenConsonant(w: string, from: number): number {
  let i = from;
  while (i < w.length && !isV(w[i])) i++;
  if (i >= w.length) return -1;
  i++;
  while (i < w.length && isV(w[i])) i++;
  return i >= w.length ? -1 : i + 1;
}

interface Regions {
  p1: number;
  p2: number;
  edition: EnglishEdition;
}

/** Prefixes that end R1's search early, per edition. */
const R1_PREFIXES: Record<EnglishEdition, readonly string[]> = {
  'snowball-2': ['gener', 'commun', 'arsen'],
  'snowball-3': ['gener', 'commun', 'arsen', 'past', 'univers', 'later', 'emerg', 'organ', 'inter'],
};

function markRegions(w: string, edition: EnglishEdition): Regions {
  const regions = { p1: w.length, p2: w.length, edition };
  const prefix = R1_PREFIXES[edition].find((p) => w.startsWith(p));
  const p1 = prefix !== undefined ? prefix.length : pastVowelThenConsonant(w, 0);
  if (p1 < 0) return regions;
  regions.p1 = p1;
  const p2 = pastVowelThenConsonant(w, p1);
  if (p2 >= 0) regions.p2 = p2;
  return regions;
}

const STEP_1A_APOSTROPHE = ["'s'", "'s", "'"];
const STEP_1A = byLengthDesc(['sses', 'ied', 'ies', 's', 'us', 'ss']);

function step1a(w: string): string {
  const apostrophe = longestSuffix(w, STEP_1A_APOSTROPHE);
  if (apostrophe !== undefined) w = w.slice(0, w.length - apostrophe.length);
  const suffix = longestSuffix(w, STEP_1A);
  if (suffix === undefined) return w;
  const start = w.length - suffix.length;
  switch (suffix) {
    case 'sses':
      return `${w.slice(0, start)}ss`;
    case 'ied':
    case 'ies':
      return w.slice(0, start) + (start >= 2 ? 'i' : 'ie');
    case 's':
      // A vowel somewhere before the letter that precedes the s.
      return start >= 1 && hasVowelBefore(w, start - 1) ? w.slice(0, start) : w;
    default:
      return w;
  }
}

const STEP_1B = byLengthDesc(['eed', 'eedly', 'ed', 'edly', 'ing', 'ingly']);

const EED_KEPT = new Set(['proc', 'exc', 'succ']);
const ING_KEPT = new Set(['inn', 'out', 'cann', 'herr', 'earr', 'even']);

function step1b(w: string, { p1, edition }: Regions): string {
  const suffix = longestSuffix(w, STEP_1B);
  if (suffix === undefined) return w;
  const start = w.length - suffix.length;
  const stem = w.slice(0, start);
  if (suffix === 'eed' || suffix === 'eedly') {
    if (p1 > start || (edition === 'snowball-3' && EED_KEPT.has(stem))) return w;
    return `${stem}ee`;
  }
  if (edition === 'snowball-3' && suffix === 'ing') {
    // dying -> die, vying -> vie; inning, outing, evening... stay as they are.
    if (stem.length === 2 && stem[1] === 'y' && !isV(stem[0])) return `${stem[0]}ie`;
    if (ING_KEPT.has(stem)) return w;
  }
  if (!hasVowelBefore(w, start)) return w;
  w = stem;
  const end = w.slice(-2);
  if (end === 'at' || end === 'bl' || end === 'iz') return `${w}e`;
  if (DOUBLES.has(end)) {
    const loneAeo = w.length === 3 && (w[0] === 'a' || w[0] === 'e' || w[0] === 'o');
    return edition === 'snowball-3' && loneAeo ? w : w.slice(0, -1);
  }
  return w.length === p1 && shortV(w, w.length, edition) ? `${w}e` : w;
}

function step1c(w: string): string {
  const n = w.length;
  const last = w[n - 1];
  if ((last === 'y' || last === 'Y') && n - 2 > 0 && !isV(w[n - 2])) return `${w.slice(0, -1)}i`;
  return w;
}

const STEP_2: ReadonlyMap<string, string> = new Map([
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['abli', 'able'],
  ['entli', 'ent'],
  ['izer', 'ize'],
  ['ization', 'ize'],
  ['ational', 'ate'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['aliti', 'al'],
  ['alli', 'al'],
  ['fulness', 'ful'],
  ['ousli', 'ous'],
  ['ousness', 'ous'],
  ['iveness', 'ive'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
  ['bli', 'ble'],
  ['ogist', 'og'],
  ['ogi', 'og'],
  ['fulli', 'ful'],
  ['lessli', 'less'],
  ['li', ''],
]);
const STEP_2_SUFFIXES = byLengthDesc([...STEP_2.keys()]);

function step2(w: string, { p1, edition }: Regions): string {
  let suffix = longestSuffix(w, STEP_2_SUFFIXES);
  // snowball-2 has no -ogist rule; its longest match is then -ist, which Step 2 does not list.
  if (suffix === 'ogist' && edition === 'snowball-2') suffix = undefined;
  if (suffix === undefined) return w;
  const start = w.length - suffix.length;
  if (start < p1) return w;
  if (suffix === 'ogi' && w[start - 1] !== 'l') return w;
  if (suffix === 'li' && !VALID_LI.has(w[start - 1] ?? '')) return w;
  return w.slice(0, start) + STEP_2.get(suffix)!;
}

const STEP_3: ReadonlyMap<string, string> = new Map([
  ['tional', 'tion'],
  ['ational', 'ate'],
  ['alize', 'al'],
  ['icate', 'ic'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
  ['ative', ''],
]);
const STEP_3_SUFFIXES = byLengthDesc([...STEP_3.keys()]);

function step3(w: string, { p1, p2 }: Regions): string {
  const suffix = longestSuffix(w, STEP_3_SUFFIXES);
  if (suffix === undefined) return w;
  const start = w.length - suffix.length;
  if (start < p1 || (suffix === 'ative' && start < p2)) return w;
  return w.slice(0, start) + STEP_3.get(suffix)!;
}

const STEP_4 = byLengthDesc(
  'al ance ence er ic able ible ant ement ment ent ism ate iti ous ive ize ion'.split(' '),
);

function step4(w: string, { p2 }: Regions): string {
  const suffix = longestSuffix(w, STEP_4);
  if (suffix === undefined) return w;
  const start = w.length - suffix.length;
  if (start < p2) return w;
  if (suffix === 'ion' && w[start - 1] !== 's' && w[start - 1] !== 't') return w;
  return w.slice(0, start);
}

function step5(w: string, { p1, p2, edition }: Regions): string {
  const start = w.length - 1;
  const last = w[start];
  if (last === 'e' && (p2 <= start || (p1 <= start && !shortV(w, start, edition)))) return w.slice(0, start);
  if (last === 'l' && p2 <= start && w[start - 1] === 'l') return w.slice(0, start);
  return w;
}

function stemBmp(word: string, edition: EnglishEdition): string {
  const exception = (edition === 'snowball-2' ? EXCEPTIONS_2 : EXCEPTIONS_3).get(word);
  if (exception !== undefined) return exception;
  if (word.length < 3) return word;

  // Prelude: drop a leading apostrophe; a y that acts as a consonant becomes Y.
  let w = word.startsWith("'") ? word.slice(1) : word;
  let yFound = false;
  if (w.startsWith('y')) {
    w = `Y${w.slice(1)}`;
    yFound = true;
  }
  for (let i = 1; i < w.length; i++) {
    if (w[i] === 'y' && isV(w[i - 1])) {
      w = `${w.slice(0, i)}Y${w.slice(i + 1)}`;
      yFound = true;
    }
  }

  const regions = markRegions(w, edition);
  w = step1a(w);
  if (edition === 'snowball-3' || !EXCEPTIONS_AFTER_1A.has(w)) {
    w = step1b(w, regions);
    w = step1c(w);
    w = step2(w, regions);
    w = step3(w, regions);
    w = step4(w, regions);
    w = step5(w, regions);
  }
  return yFound ? w.replaceAll('Y', 'y') : w;
}

/** Snowball English stem of a lower-case word; `snowball-2` is the edition fastembed uses. */
export function stemEnglish(word: string, edition: EnglishEdition = 'snowball-2'): string {
  return stemByCodePoints(word, (w) => stemBmp(w, edition));
}
