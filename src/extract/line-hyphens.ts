import type { ExtractedDocument, PageSpan } from './extractor.js';

/*
 * Words hyphenated over a line break, as PDF text and text converted from it carry them
 * ("besæt-\ntelse", "forsvars-\nalliance"), joined again at extraction, so the chunks, the index and
 * the returned text all hold the word. What was typeset with a hyphen of its own keeps it. The rule,
 * for a line ending in `left-` and the next line starting with the word `right` (any language):
 *
 *   1. `right` is a coordinating conjunction ("videns- og servicesamfund", "pre- and post-war"): a
 *      suspended compound, left as it is (the line break becomes a space).
 *   2. `left` holds a digit, `right` starts with a capital letter, or `left-right` is written
 *      within a line elsewhere in the document: a real hyphen ("1600-tallet", "Nord-Korea",
 *      "e-mail"): kept, the line break dropped.
 *   3. `leftright` is a word of the document, or the start of one (an inflected form:
 *      "forsvarsalliance" in "forsvarsalliancen"): joined.
 *   4. `left` and `right` are both words on their own elsewhere in the document (not parts of a
 *      hyphenated compound): two words the document never writes joined ("guld-hornene"): hyphen
 *      kept, the line break dropped; the index finds each word.
 *   5. Otherwise (a fragment that is no word on its own, "samarbej-\nde"): joined.
 * The words of the document are read outside the line breaks being judged, case folded.
 */
const BREAK = /([\p{L}\p{M}\p{N}]+)-[ \t]*\r?\n[ \t]*([\p{L}\p{M}]+)/gu;
/** What every match of BREAK holds. */
const HYPHEN_AT_BREAK = /-[ \t]*\r?\n/;

/** Coordinating conjunctions that follow a suspended hyphen, in the languages Kilde meets most. */
const CONJUNCTIONS = new Set([
  'og',
  'eller',
  'samt',
  'and',
  'or',
  'nor',
  'und',
  'oder',
  'sowie',
  'och',
  'ou',
]);

/** `text` replaces `start`–`end`; it ends with the old text from `right` on (the continuation). */
interface Edit {
  start: number;
  end: number;
  right: number;
  text: string;
}

/**
 * A word run. A run with no hyphen touching it is a word on its own ("forsvars" in "forsvars- og
 * sikkerhedspolitik" is not); runs joined by single hyphens are a hyphenated compound.
 */
const WORD = /[\p{L}\p{M}\p{N}]+/gu;
const HYPHEN = 0x2d;

/** The replacements for each word hyphenated over a line break in `text` (see the rule above). */
function lineHyphenEdits(text: string): Edit[] {
  // Most texts have no hyphen before a line break: one quick scan for it spares reading every word
  // (BREAK tries each word of the text; ≈0.1 ms of the main thread's CPU per small file).
  if (!HYPHEN_AT_BREAK.test(text)) return [];
  const breaks = [...text.matchAll(BREAK)];
  if (breaks.length === 0) return [];
  // The document's words outside the breaks (each break a space), in one pass over its word runs:
  // every word; the lone ones, with no hyphen touching either end (not part of a hyphenated
  // compound); and each pair of words written with a hyphen between them within a line.
  let outside = '';
  let from = 0;
  for (const m of breaks) {
    outside += `${text.slice(from, m.index)} `;
    from = m.index + m[0].length;
  }
  outside += text.slice(from);
  const words = new Set<string>();
  const lone = new Set<string>();
  const pairs = new Set<string>();
  let previous = { end: -2, word: '' };
  for (const m of outside.matchAll(WORD)) {
    const w = m[0].toLowerCase();
    const end = m.index + m[0].length;
    const hyphenBefore = outside.charCodeAt(m.index - 1) === HYPHEN;
    words.add(w);
    if (!hyphenBefore && outside.charCodeAt(end) !== HYPHEN) lone.add(w);
    if (hyphenBefore && previous.end === m.index - 1) pairs.add(`${previous.word}-${w}`);
    previous = { end, word: w };
  }
  const sorted = [...words].sort();
  const startsAWord = (prefix: string): boolean => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    return sorted[lo]?.startsWith(prefix) === true;
  };
  return breaks.map((m) => {
    const [left, right] = [m[1]!, m[2]!];
    const start = m.index;
    const end = start + m[0].length;
    const at = { start, end, right: end - right.length };
    const [l, r] = [left.toLowerCase(), right.toLowerCase()];
    const hyphen = { ...at, text: `${left}-${right}` };
    const joined = { ...at, text: left + right };
    if (CONJUNCTIONS.has(r)) return { ...at, text: `${left}- ${right}` };
    if (/\p{N}/u.test(left) || /^\p{Lu}/u.test(right) || pairs.has(`${l}-${r}`)) return hyphen;
    if (startsAWord(l + r)) return joined;
    if (lone.has(l) && lone.has(r)) return hyphen;
    return joined;
  });
}

/**
 * `text` with its words hyphenated over a line break rejoined (the rule above), and a function
 * moving an offset of `text` to the same place in the result.
 */
export function joinLineHyphens(text: string): { text: string; move: (offset: number) => number } {
  const edits = lineHyphenEdits(text);
  if (edits.length === 0) return { text, move: (offset) => offset };
  let out = '';
  let pos = 0;
  // Each edit's start in the old text and in the new, for moving offsets.
  const marks: { old: number; now: number; edit: Edit }[] = [];
  for (const edit of edits) {
    out += text.slice(pos, edit.start);
    marks.push({ old: edit.start, now: out.length, edit });
    out += edit.text;
    pos = edit.end;
  }
  out += text.slice(pos);
  const move = (offset: number): number => {
    let lo = -1;
    let hi = marks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (marks[mid]!.old <= offset) lo = mid;
      else hi = mid - 1;
    }
    if (lo < 0) return offset;
    const { old, now, edit } = marks[lo]!;
    // In the continuation or after it: the same distance from the continuation's start; in the
    // first fragment, from the edit's start; in the line break between them, at the joint.
    const joint = now + edit.text.length - (edit.end - edit.right);
    if (offset >= edit.right) return joint + (offset - edit.right);
    return Math.min(now + (offset - old), joint);
  };
  return { text: out, move };
}

/** The document with its words hyphenated over a line break rejoined; page spans moved to match. */
export function joinDocumentLineHyphens(doc: ExtractedDocument): ExtractedDocument {
  const { text, move } = joinLineHyphens(doc.text);
  if (text === doc.text) return doc;
  const pages: PageSpan[] | undefined = doc.pages?.map((p) => ({
    page: p.page,
    start: move(p.start),
    end: move(p.end),
  }));
  return { ...doc, text, ...(pages ? { pages } : {}) };
}
