import type { SearchHit } from '../index/contract.js';

/**
 * Whether `inner`'s heading breadcrumb lies strictly inside `outer`'s, in the same document: the
 * chunk of a subsection and the introduction of its chapter (or of any heading above it).
 */
function isInside(inner: SearchHit, outer: SearchHit): boolean {
  const o = outer.meta.headers;
  const i = inner.meta.headers;
  if (!Array.isArray(o) || !Array.isArray(i) || o.length === 0 || i.length <= o.length) return false;
  if (inner.meta.file_id !== outer.meta.file_id) return false;
  return o.every((h, n) => h === i[n]);
}

/**
 * A lexical ranking with each section's introduction moved right below the first of its own
 * subsections that the ranking holds, when that subsection scores at least `ratio` of it (a hit
 * moves once; an anchor is always below the hit it carries, so every hit is placed). An introduction
 * (a chapter's opening text, under the chapter heading alone) names what its subsections then say in
 * full, and with the chapter title in every chunk's contextual header it matches a question about
 * one subsection almost as well as that subsection does, and often better: BM25 rewards its short
 * text. Measured in docs/quality.md.
 *
 * The scores stay in ranking order: a hit that moves takes the score of the rank it moves to.
 */
export function subsectionsFirst<T extends SearchHit>(hits: readonly T[], ratio: number): T[] {
  // Each hit's anchor: the first hit below it inside its section that scores close enough.
  const after = new Map<T, T[]>();
  const deferred = new Set<T>();
  hits.forEach((outer, i) => {
    const anchor = hits.find((h, n) => n > i && h.score >= ratio * outer.score && isInside(h, outer));
    if (!anchor) return;
    deferred.add(outer);
    after.set(anchor, [...(after.get(anchor) ?? []), outer]);
  });
  if (deferred.size === 0) return [...hits];
  // A deferred hit comes right after its anchor (and brings the hits deferred behind it along).
  const out: T[] = [];
  const emit = (h: T) => {
    out.push(h);
    for (const d of after.get(h) ?? []) emit(d);
  };
  for (const h of hits) if (!deferred.has(h)) emit(h);
  return out.map((h, n) => (h === hits[n] ? h : { ...h, score: hits[n]!.score }));
}

/** A hit's section: its document and heading breadcrumb (the whole document when it has none). */
function sectionKey(hit: SearchHit): string {
  const headers = Array.isArray(hit.meta.headers) ? hit.meta.headers : [];
  return `${hit.meta.file_id}\u0000${headers.join('\u0000')}`;
}

/**
 * A lexical ranking in which a section is ranked by its best chunk rather than by many: each further
 * chunk of a section already in the ranking counts `factor` times less than the one before it (the
 * second at `factor` of its score, the third at `factor`²), and the ranking is sorted again (ties
 * keep their order). A strong second chunk stays ahead of another section's weak first one, but the
 * answer's section is no longer pushed out of the first results by two or three chunks of one
 * neighbour that repeats the question's words. Measured in docs/quality.md.
 *
 * The scores stay in ranking order: a hit that moves takes the score of the rank it moves to.
 */
export function sectionRepeatsDown<T extends SearchHit>(hits: readonly T[], factor: number): T[] {
  const seen = new Map<string, number>();
  const weighed = hits.map((hit, at) => {
    const key = sectionKey(hit);
    const before = seen.get(key) ?? 0;
    seen.set(key, before + 1);
    return { hit, at, score: hit.score * factor ** before };
  });
  weighed.sort((a, b) => b.score - a.score || a.at - b.at);
  return weighed.map(({ hit }, n) => (hit === hits[n] ? hit : { ...hit, score: hits[n]!.score }));
}
