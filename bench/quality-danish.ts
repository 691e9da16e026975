import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChunkMeta } from '../src/index/contract.js';
import { DANISH_AUDIT } from './da-citizenship-audit.js';
import { benchData } from './lib/data.js';
import {
  type AuditEntry,
  auditedTargets,
  auditProblems,
  breadcrumbHas,
  breadcrumbNames,
  sectionOf,
  sectionTexts,
} from './quality-metrics.js';

/**
 * The Danish citizenship set of `bench:quality` (and `bench/quality-variants.ts`): the questions,
 * the textbook's chapters, the audited labels checked against the textbook, and the scoring.
 */
export interface Question {
  _id: string;
  text: string;
  section: string;
}

/** The innermost heading of a chunk's breadcrumb, shortened, to print a miss. */
const sectionName = (m: ChunkMeta) => {
  const headers = Array.isArray(m.headers) ? m.headers.map(String) : [];
  return (headers.at(-1) ?? String(m.source ?? '?')).slice(0, 40);
};

/**
 * Top-1 / top-5 section accuracy of `search` over the questions: on the labels as given, their nearest
 * numbered section (`target`), the audited labels, and the answerable questions alone; `misses` prints
 * each question not found first under its audited label, and each not in the top five as given.
 */
export async function evalDanish(
  search: (query: string, k: number) => Promise<readonly ChunkMeta[]>,
  questions: readonly Question[],
  target: (q: Question) => string,
  audit: ReadonlyMap<string, AuditEntry>,
  misses = false,
) {
  const hits = { top1: 0, top5: 0, near1: 0, near5: 0 };
  const audited = { top1: 0, top5: 0 };
  // The same over the questions the textbook can answer (audit entries of kind `absent` left out).
  const answerable = { n: 0, top1: 0, top5: 0 };
  for (const q of questions) {
    const metas = await search(q.text, 5);
    const entry = audit.get(q._id);
    const targets = auditedTargets(target(q), entry);
    const names = (m: ChunkMeta | undefined) => targets.some((t) => breadcrumbNames(m, t));
    const [first, five] = [names(metas[0]), metas.some(names)];
    if (first) audited.top1 += 1;
    if (five) audited.top5 += 1;
    if (entry?.kind !== 'absent') {
      answerable.n += 1;
      if (first) answerable.top1 += 1;
      if (five) answerable.top5 += 1;
      if (misses && !first)
        console.log(
          `audited ${five ? 'top-5' : 'miss '} ${targets.join(' / ')}: ${q.text}\n     found: ${metas.map(sectionName).join(' | ')}`,
        );
    }
    if (misses && !metas.some((m) => breadcrumbHas(m, q.section))) {
      const reachable = target(q) === q.section ? '' : ` (nearest ${target(q)})`;
      console.log(
        `miss ${q.section}${reachable}: ${q.text}\n     found: ${metas.map(sectionName).join(' | ')}`,
      );
    }
    if (breadcrumbHas(metas[0], q.section)) hits.top1 += 1;
    if (metas.some((m) => breadcrumbHas(m, q.section))) hits.top5 += 1;
    if (breadcrumbHas(metas[0], target(q))) hits.near1 += 1;
    if (metas.some((m) => breadcrumbHas(m, target(q)))) hits.near5 += 1;
  }
  const n = questions.length;
  return {
    scores: [hits.top1 / n, hits.top5 / n, hits.near1 / n, hits.near5 / n],
    audited: [audited.top1 / n, audited.top5 / n],
    answerable: [answerable.top1 / answerable.n, answerable.top5 / answerable.n],
    answerableN: answerable.n,
  };
}

/** The questions (the first `limit`), the chapters, and the audit entries that still hold. */
export async function danishSet(limit = Number.POSITIVE_INFINITY) {
  const dir = `${benchData('da-citizenship')}/`;
  const questions = (await readFile(`${dir}questions-dev.jsonl`, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Question)
    .slice(0, limit);
  const corpus = `${dir}corpus/`;
  const names = (await readdir(corpus)).filter((f) => f.endsWith('.md')).sort();
  // Some labelled sections (in chapters 5 and 6) have no numbered heading in the textbook, so no
  // breadcrumb can name them: the second pair of columns scores those against the nearest
  // numbered ancestor heading instead, which tells ranking misses from unreachable labels.
  const headings = new Set<string>();
  const sections = new Map<string, string>();
  for (const name of names) {
    const markdown = await readFile(join(corpus, name), 'utf8');
    for (const line of markdown.split('\n')) {
      const section = line.startsWith('#') ? sectionOf(line.replace(/^#+/, '')) : undefined;
      if (section) headings.add(section);
    }
    for (const [title, text] of sectionTexts(markdown)) {
      sections.set(title, sections.has(title) ? `${sections.get(title)} ${text}` : text);
    }
  }
  // The audited labels (bench/da-citizenship-audit.ts), each checked against the textbook first.
  const byId = new Map(questions.map((q) => [q._id, q]));
  const audit = new Map<string, AuditEntry>();
  const problems: string[] = [];
  for (const entry of DANISH_AUDIT) {
    const q = byId.get(entry.id);
    if (!q) continue;
    const wrong = auditProblems(entry, q.section, sections);
    if (wrong.length === 0) audit.set(entry.id, entry);
    problems.push(...wrong);
  }
  const nearest = (q: Question) => {
    let s = q.section;
    while (!headings.has(s) && s.includes('.')) s = s.slice(0, s.lastIndexOf('.'));
    return s;
  };
  const unreachable = questions.filter((q) => !headings.has(q.section)).length;
  return { questions, corpus, names, audit, problems, nearest, unreachable };
}
