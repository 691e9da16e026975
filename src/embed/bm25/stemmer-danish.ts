/**
 * The Snowball Danish stemmer, written from the algorithm's published description
 * (snowballstem.org/algorithms/danish). Suffixes are searched only inside R1 (Snowball's
 * `setlimit tomark p1`), so the longest suffix that fits in R1 wins, unlike English where the
 * longest suffix is chosen first. Input must be lower case, as in fastembed.
 */
import { byLengthDesc, stemByCodePoints } from './snowball-chars.js';

const VOWELS = new Set('aeiouyæåø');
const S_ENDING = new Set('abcdfghjklmnoprtvyzå');
const isV = (c: string | undefined): boolean => c !== undefined && VOWELS.has(c);

const MAIN_SUFFIXES = byLengthDesc(
  (
    'hed ethed ered e erede ende erende ene erne ere en heden eren er heder erer heds es endes erendes ' +
    'enes ernes eres ens hedens erens ers ets erets et eret s'
  ).split(' '),
);
const CONSONANT_PAIRS = ['gd', 'dt', 'gt', 'kt'];
const OTHER_SUFFIXES = byLengthDesc(['ig', 'lig', 'elig', 'els', 'løst']);

/** R1 starts after the first non-vowel that follows a vowel, but never before the 4th letter. */
function markP1(w: string): number {
  if (w.length < 3) return w.length;
  let i = 0;
  while (i < w.length && !isV(w[i])) i++;
  while (i < w.length && isV(w[i])) i++;
  if (i >= w.length) return w.length;
  return Math.max(i + 1, 3);
}

/** Longest of `suffixes` that `w` ends with and that lies entirely inside R1. */
function suffixInR1(w: string, suffixes: readonly string[], p1: number): string | undefined {
  for (const s of suffixes) if (w.length - s.length >= p1 && w.endsWith(s)) return s;
  return undefined;
}

function mainSuffix(w: string, p1: number): string {
  const suffix = suffixInR1(w, MAIN_SUFFIXES, p1);
  if (suffix === undefined) return w;
  const start = w.length - suffix.length;
  if (suffix === 's' && !S_ENDING.has(w[start - 1] ?? '')) return w;
  return w.slice(0, start);
}

function consonantPair(w: string, p1: number): string {
  return suffixInR1(w, CONSONANT_PAIRS, p1) === undefined ? w : w.slice(0, -1);
}

function otherSuffix(w: string, p1: number): string {
  if (w.endsWith('igst')) w = w.slice(0, -2);
  const suffix = suffixInR1(w, OTHER_SUFFIXES, p1);
  if (suffix === undefined) return w;
  if (suffix === 'løst') return w.slice(0, -1);
  return consonantPair(w.slice(0, w.length - suffix.length), p1);
}

function undouble(w: string, p1: number): string {
  const n = w.length;
  if (n - 1 >= p1 && n >= 2 && !isV(w[n - 1]) && w[n - 2] === w[n - 1]) return w.slice(0, -1);
  return w;
}

function stemBmp(word: string): string {
  const p1 = markP1(word);
  let w = mainSuffix(word, p1);
  w = consonantPair(w, p1);
  w = otherSuffix(w, p1);
  return undouble(w, p1);
}

/** Snowball Danish stem of a lower-case word. */
export function stemDanish(word: string): string {
  return stemByCodePoints(word, stemBmp);
}
