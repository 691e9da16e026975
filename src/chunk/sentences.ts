/** A [start, end) character range in a document's text. */
export type Span = [number, number];

/*
 * Abbreviations usually followed by a capitalised word or a number, where a full stop does not end
 * the sentence (Danish and English). Those that often end a sentence too (etc., osv., mv.) are left
 * out: a sentence break before a lowercase word is already suppressed by the general rule.
 */
const ABBREVIATIONS = new Set([
  // Danish
  'bl.a',
  'ca',
  'cand',
  'dvs',
  'evt',
  'f.eks',
  'fhv',
  'fr',
  'hr',
  'inkl',
  'jf',
  'kap',
  'kl',
  'kr',
  'mht',
  'nr',
  'pga',
  'pkt',
  'pct',
  'sct',
  'skt',
  'stk',
  'tlf',
  'vedr',
  // English
  'approx',
  'cf',
  'dr',
  'e.g',
  'fig',
  'figs',
  'i.e',
  'jr',
  'mr',
  'mrs',
  'ms',
  'mt',
  'prof',
  'rev',
  'sr',
  'st',
  'vol',
  'vs',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'okt',
  'nov',
  'dec',
]);

/** Sentence-ending punctuation, any closing quotes/brackets, then whitespace or the end. */
const TERMINATOR = /[.!?…。！？]+["'”’»)\]]*(?=\s|$)/gu;
/** Lines that start a new unit whatever precedes them: headings, list items, table rows, fences. */
const BLOCK_START = /^[ \t]*(?:#{1,6}(?:[ \t]|$)|[-*+•][ \t]|\d{1,3}[.)][ \t]|\||```|~~~)/;
const LOWER_START = /^["'“„«([]*\p{Ll}/u;

/**
 * Splits `text[from, to)` into trimmed sentence spans. Rules: blank lines and Markdown block starts
 * (headings, list items, table rows) always break; `.`, `!`, `?`, `…` break when followed by
 * whitespace and a word that does not start in lowercase; a full stop after a known abbreviation,
 * a single letter (initials) or a one- or two-digit number (Danish ordinals: "1. Verdenskrig",
 * "den 5. juni") does not. Decimals ("3.14", "6.000") never break since no whitespace follows.
 */
export function sentenceSpans(text: string, from = 0, to = text.length): Span[] {
  const out: Span[] = [];
  for (const [ls, le] of lineBlocks(text, from, to)) {
    let start = ls;
    TERMINATOR.lastIndex = ls;
    for (let m = TERMINATOR.exec(text); m && m.index < le; m = TERMINATOR.exec(text)) {
      const end = Math.min(m.index + m[0].length, le);
      if (!breaksAfter(text, m.index, m[0], end, le)) continue;
      pushTrimmed(text, out, start, end);
      start = end;
    }
    pushTrimmed(text, out, start, le);
  }
  return out;
}

function breaksAfter(text: string, at: number, punct: string, end: number, limit: number): boolean {
  const next = text.slice(end, Math.min(limit, end + 40)).trimStart();
  if (next === '') return true;
  if (LOWER_START.test(next)) return false;
  if (punct[0] !== '.' || punct.startsWith('..')) return true;
  const word = /[\p{L}\p{N}.]*$/u.exec(text.slice(Math.max(0, at - 20), at))?.[0] ?? '';
  const bare = word.replace(/^\.+/, '').toLowerCase();
  if (bare === '') return true;
  if (ABBREVIATIONS.has(bare)) return false;
  if (/^\p{L}$/u.test(bare)) return false;
  if (/^\d{1,2}$/.test(bare)) return false;
  // Dotted abbreviations such as "U.S." or "a.m." that are not in the list.
  if (/^(?:\p{L}{1,2}\.)+\p{L}{1,2}$/u.test(bare)) return false;
  return true;
}

/** Line ranges grouped into blocks: a blank line or a block-start line begins a new one. */
function lineBlocks(text: string, from: number, to: number): Span[] {
  const out: Span[] = [];
  let blockStart = -1;
  let blockEnd = from;
  let pos = from;
  while (pos < to) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0 || nl > to) nl = to;
    const line = text.slice(pos, nl);
    const blank = line.trim() === '';
    if (blank || BLOCK_START.test(line)) {
      if (blockStart >= 0) out.push([blockStart, blockEnd]);
      blockStart = blank ? -1 : pos;
      // A heading is a unit of its own.
      if (!blank && /^[ \t]*#/.test(line)) {
        out.push([pos, nl]);
        blockStart = -1;
      }
    } else if (blockStart < 0) {
      blockStart = pos;
    }
    blockEnd = nl;
    pos = nl + 1;
  }
  if (blockStart >= 0) out.push([blockStart, blockEnd]);
  return out;
}

function pushTrimmed(text: string, out: Span[], start: number, end: number): void {
  let s = start;
  let e = end;
  while (s < e && isSpace(text.charCodeAt(s))) s++;
  while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
  if (e > s) out.push([s, e]);
}

export function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || code === 0xa0 || code === 0x3000 || code === 0x2028;
}

/** Whitespace-separated words of `text[from, to)`. */
export function wordSpans(text: string, from = 0, to = text.length): Span[] {
  const out: Span[] = [];
  const re = /\S+/gu;
  re.lastIndex = from;
  for (let m = re.exec(text); m && m.index < to; m = re.exec(text)) {
    out.push([m.index, Math.min(to, m.index + m[0].length)]);
  }
  return out;
}

/**
 * Blank-line separated paragraphs of `text[from, to)`, trimmed. A fenced code block (``` or ~~~)
 * stays whole even when it contains blank lines.
 */
export function paragraphSpans(text: string, from = 0, to = text.length): Span[] {
  const out: Span[] = [];
  let start = -1;
  let end = from;
  let fence: string | undefined;
  let pos = from;
  while (pos < to) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0 || nl > to) nl = to;
    const line = text.slice(pos, nl);
    const marker = /^[ \t]{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (
        marker !== undefined &&
        marker[0] === fence[0] &&
        marker.length >= fence.length &&
        line.trim() === marker
      )
        fence = undefined;
      end = nl;
    } else if (line.trim() === '') {
      if (start >= 0) pushTrimmed(text, out, start, end);
      start = -1;
    } else {
      if (start < 0) start = pos;
      if (marker) fence = marker;
      end = nl;
    }
    pos = nl + 1;
  }
  if (start >= 0) pushTrimmed(text, out, start, end);
  return out;
}
