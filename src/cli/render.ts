import type { ChunkMeta } from '../index/contract.js';
import type { SearchResult } from './backend.js';

const BOLD = '\u001b[1m';
const PLAIN = '\u001b[22m';
const DIM = '\u001b[2m';
const SNIPPET_CHARS = 240;

/** Query words worth highlighting (letters and digits in any script), longest first. */
export function queryTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.filter((w) => w.length >= 3))].sort((a, b) => b.length - a.length);
}

/**
 * Whether a word of the text matches a query term. The index stems words, so "spansk" should light
 * up for "spanske": compare a prefix that leaves room for a short inflection.
 */
function matches(word: string, terms: readonly string[]): boolean {
  const w = word.toLowerCase();
  return terms.some((t) => {
    const stem = t.length > 5 ? t.slice(0, t.length - 2) : t;
    return w.startsWith(stem) && w.length <= t.length + 3;
  });
}

/** The window of the chunk with the most query words, whitespace collapsed, words cut at the edges. */
export function snippet(content: string, terms: readonly string[], width = SNIPPET_CHARS): string {
  const text = content.replace(/\s+/g, ' ').trim();
  if (text.length <= width) return text;
  const hits: number[] = [];
  for (const m of text.matchAll(/[\p{L}\p{N}]+/gu)) if (matches(m[0], terms)) hits.push(m.index);
  let bestStart = 0;
  let bestCount = -1;
  for (const start of hits.length > 0 ? hits : [0]) {
    const from = Math.max(0, start - 40);
    const count = hits.filter((h) => h >= from && h < from + width).length;
    if (count > bestCount) {
      bestCount = count;
      bestStart = from;
    }
  }
  let from = bestStart;
  let to = Math.min(text.length, from + width);
  if (from > 0) from = text.indexOf(' ', from) + 1 || from;
  if (to < text.length) to = text.lastIndexOf(' ', to) > from ? text.lastIndexOf(' ', to) : to;
  return `${from > 0 ? '…' : ''}${text.slice(from, to)}${to < text.length ? '…' : ''}`;
}

/** Marks query words in bold (ANSI) on a terminal; plain text otherwise. */
export function highlight(text: string, terms: readonly string[], ansi: boolean): string {
  if (!ansi || terms.length === 0) return text;
  return text.replace(/[\p{L}\p{N}]+/gu, (w) => (matches(w, terms) ? `${BOLD}${w}${PLAIN}` : w));
}

function pageOf(meta: ChunkMeta): string | undefined {
  if (meta.pages && meta.pages.length > 1) return `pp. ${meta.pages[0]}–${meta.pages.at(-1)}`;
  if (meta.page_number !== undefined) return `p. ${meta.page_number}`;
  return undefined;
}

/** Ranked hits for people: score, file, page, heading breadcrumb, highlighted snippet. */
export function renderHits(result: SearchResult, query: string, ansi: boolean): string {
  const documents = result.documents[0] ?? [];
  const metas = result.metadatas[0] ?? [];
  const scores = result.distances[0] ?? [];
  if (documents.length === 0) return 'No results.\n';
  const terms = queryTerms(query);
  const dim = (s: string) => (ansi ? `${DIM}${s}${PLAIN}` : s);
  const lines: string[] = [];
  documents.forEach((content, i) => {
    const meta = metas[i] as ChunkMeta;
    const score = scores[i] ?? 0;
    const where = [meta.source ?? meta.name ?? meta.file_id, pageOf(meta)].filter(Boolean).join(', ');
    lines.push(`${i + 1}. ${score.toFixed(3)}  ${ansi ? `${BOLD}${where}${PLAIN}` : where}`);
    if (meta.headers && meta.headers.length > 0) lines.push(`   ${dim(meta.headers.join(' › '))}`);
    lines.push(`   ${highlight(snippet(content, terms), terms, ansi)}`);
    lines.push('');
  });
  return `${lines.join('\n')}`;
}
