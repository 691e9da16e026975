import type { ChunkMeta } from '../src/index/contract.js';

export interface RankScores {
  ndcg: number;
  recall: number;
  mrr: number;
}

/**
 * BEIR's measures at cut-off k for one query: nDCG as trec_eval's ndcg_cut (gain = graded
 * relevance, discount log2(rank + 1), ideal ranking from the qrels), Recall (relevant documents
 * found / relevant documents) and MRR (1 / rank of the first relevant document).
 */
export function scoreRanking(
  ranked: readonly string[],
  rel: ReadonlyMap<string, number>,
  k: number,
): RankScores {
  let dcg = 0;
  let mrr = 0;
  let found = 0;
  ranked.slice(0, k).forEach((doc, i) => {
    const g = rel.get(doc) ?? 0;
    if (g <= 0) return;
    dcg += g / Math.log2(i + 2);
    found += 1;
    if (mrr === 0) mrr = 1 / (i + 1);
  });
  const ideal = [...rel.values()].filter((g) => g > 0).sort((a, b) => b - a);
  const idcg = ideal.slice(0, k).reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
  return { ndcg: idcg > 0 ? dcg / idcg : 0, recall: ideal.length > 0 ? found / ideal.length : 0, mrr };
}

/** The section number a heading starts with ("1.9.2 Den Spanske Syge" → "1.9.2"), if any. */
export function sectionOf(heading: string): string | undefined {
  const first = heading.trim().split(/\s+/)[0]?.replace(/\.$/, '');
  return first && /^\d+(\.\d+)*$/.test(first) ? first : undefined;
}

/** Whether a chunk's heading breadcrumb (`meta.headers`) names `section` exactly. */
export function breadcrumbHas(meta: ChunkMeta | undefined, section: string): boolean {
  const headers = Array.isArray(meta?.headers) ? meta.headers : [];
  return headers.some((h) => sectionOf(String(h)) === section);
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/**
 * Each heading's section in a Markdown chapter, keyed by its title (whitespace squashed): the text
 * under it and under its sub-headings, lines joined and words hyphenated over a line break joined,
 * so an audit's evidence can be searched as running text.
 */
export function sectionTexts(markdown: string): Map<string, string> {
  const out = new Map<string, string[]>();
  let stack: { level: number; title: string }[] = [];
  for (const line of markdown.split('\n')) {
    const m = /^(#{1,6})\s+(.*)$/.exec(line);
    if (m) {
      const level = m[1]!.length;
      stack = [...stack.filter((h) => h.level < level), { level, title: squash(m[2]!) }];
      if (!out.has(stack.at(-1)!.title)) out.set(stack.at(-1)!.title, []);
      continue;
    }
    for (const h of stack) out.get(h.title)!.push(line);
  }
  const joined = (lines: string[]) =>
    squash(lines.join('\n').replace(/(\p{L})-[ \t]*\r?\n[ \t]*(\p{Ll})/gu, '$1$2'));
  return new Map([...out].map(([title, lines]) => [title, joined(lines)]));
}

/** The text of the section a label names: by its heading number ("2.3.1"), else by its title. */
export function labelText(sections: ReadonlyMap<string, string>, label: string): string | undefined {
  for (const [title, text] of sections)
    if (sectionOf(title) === label || title === squash(label)) return text;
  return undefined;
}

/** Whether a chunk's breadcrumb names `section`: a heading number (exactly), or a heading's whole title. */
export function breadcrumbNames(meta: ChunkMeta | undefined, section: string): boolean {
  if (sectionOf(section) === section) return breadcrumbHas(meta, section);
  const headers = Array.isArray(meta?.headers) ? meta.headers : [];
  return headers.some((h) => squash(String(h)) === squash(section));
}

/**
 * One audited question of the Danish set (bench/da-citizenship-audit.ts): where this edition of the
 * textbook answers it, with the words that show it (`evidence`, a case-insensitive regular
 * expression over the section's running text).
 *   elsewhere: the labelled section does not hold the evidence; the sections in `answerIn` do.
 *   also:      the labelled section holds it, and so do the sections in `answerIn`.
 *   absent:    nothing in the textbook matches the evidence: no ranking can answer the question.
 */
export type AuditEntry =
  | { id: string; kind: 'elsewhere' | 'also'; answerIn: readonly string[]; evidence: string }
  | { id: string; kind: 'absent'; evidence: string };

/**
 * What is wrong with an audit entry against the textbook (empty when it holds): the evidence must be
 * where the entry says, and not where it says it is not.
 */
export function auditProblems(
  entry: AuditEntry,
  label: string,
  sections: ReadonlyMap<string, string>,
): string[] {
  const re = new RegExp(entry.evidence, 'iu');
  const problems: string[] = [];
  const inLabel = re.test(labelText(sections, label) ?? '');
  if (entry.kind === 'absent') {
    const found = [...sections].find(([, text]) => re.test(text));
    if (found) problems.push(`${entry.id}: "${entry.evidence}" is in "${found[0]}"`);
    return problems;
  }
  if (entry.kind === 'elsewhere' && inLabel)
    problems.push(`${entry.id}: "${entry.evidence}" is in label ${label}`);
  if (entry.kind === 'also' && !inLabel)
    problems.push(`${entry.id}: "${entry.evidence}" is not in label ${label}`);
  for (const s of entry.answerIn) {
    if (!re.test(labelText(sections, s) ?? ''))
      problems.push(`${entry.id}: "${entry.evidence}" is not in "${s}"`);
  }
  return problems;
}

/** The sections whose chunks answer a question once audited: `label` (or its stand-in) unless the answer is elsewhere. */
export function auditedTargets(label: string, entry: AuditEntry | undefined): readonly string[] {
  if (!entry || entry.kind === 'absent') return [label];
  return entry.kind === 'elsewhere' ? entry.answerIn : [label, ...entry.answerIn];
}
