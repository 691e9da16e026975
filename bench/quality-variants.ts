import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '@lancedb/lancedb';
import { type Bm25Language, LexicalAnalyzer } from '../src/embed/bm25/analysis.js';
import { parseQrels, parseQueries } from '../src/eval/beir.js';
import { evaluate } from '../src/eval/evaluate.js';
import type { ChunkMeta, SearchHit } from '../src/index/contract.js';
import { lexicalOrder, SUBSECTION_RATIO } from '../src/retrieve/pipeline.js';
import { sectionRepeatsDown, subsectionsFirst } from '../src/retrieve/section-order.js';
import { benchData } from './lib/data.js';
import { danishSet, evalDanish } from './quality-danish.js';

/**
 * `npx tsx bench/quality-variants.ts --index-dir DIR`: ranking variants of the lexical side, tried
 * against the offline default on both sets of `bench:quality` (docs/quality.md, "Tried, and not
 * kept"). It reads the chunks `npm run bench:quality -- --index-dir DIR` ingested (their analysed
 * terms, breadcrumbs, content) and ranks them in memory with LanceDB's BM25 (k1 1.2, b 0.75, IDF
 * ln(1 + (N − n + 0.5) / (n + 0.5)) over the chunks that have terms), then as the pipeline does
 * (2k fetched, introductions below their subsections, a section's further chunks lowered, duplicates
 * by content dropped, k kept: `lexicalOrder`), so its
 * first row gives the bench's lexical figures exactly; every other row changes one thing.
 *   --only scifact|danish
 *   --variants REGEX   only the variants whose name matches
 */
const { values: args } = parseArgs({
  options: {
    'index-dir': { type: 'string' },
    only: { type: 'string' },
    variants: { type: 'string' },
  },
});
if (!args['index-dir']) {
  process.stderr.write(
    'bench/quality-variants.ts: --index-dir DIR (of a bench:quality --index-dir DIR run) is required\n',
  );
  process.exit(2);
}
const INDEX_DIR = args['index-dir'];

interface Chunk {
  terms: string[];
  meta: ChunkMeta;
  content: string;
  /** Its document's detected languages, as stored (what the analysis falls back on). */
  languages?: string[] | undefined;
}

/** A chunk's two fields for BM25F: its contextual header (title, breadcrumb) and its own text. */
interface Fields {
  heading: string[];
  body: string[];
}

/** The ingested chunks of one set, as the full-text index holds them (the ledger rows have no terms). */
async function chunksOf(set: string): Promise<Chunk[]> {
  const db = await connect(join(INDEX_DIR, set, 'lancedb'));
  const chunks: Chunk[] = [];
  for (const name of await db.tableNames()) {
    const table = await db.openTable(name);
    for (const row of await table.query().select(['lexical', 'meta', 'content', 'languages']).toArray()) {
      const terms = String(row.lexical ?? '')
        .split(' ')
        .filter(Boolean);
      const meta = (typeof row.meta === 'string' ? JSON.parse(row.meta) : row.meta) as ChunkMeta;
      const languages = row.languages ? [...row.languages].map(String) : undefined;
      if (terms.length > 0) chunks.push({ terms, meta, content: String(row.content ?? ''), languages });
    }
    table.close();
  }
  db.close();
  return chunks;
}

type Weights = Map<string, number>;
const each = (terms: readonly string[]): Weights => new Map([...new Set(terms)].map((t) => [t, 1]));

/** BM25 over the chunks, LanceDB's formula; k1 and b free. */
class Bm25 {
  readonly postings = new Map<string, [number, number][]>();
  readonly lengths: number[];
  readonly average: number;
  constructor(readonly chunks: readonly Chunk[]) {
    this.lengths = chunks.map((c) => c.terms.length);
    this.average = this.lengths.reduce((a, b) => a + b, 0) / chunks.length;
    chunks.forEach((c, i) => {
      const tf = new Map<string, number>();
      for (const t of c.terms) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [t, n] of tf) {
        const list = this.postings.get(t) ?? [];
        list.push([i, n]);
        this.postings.set(t, list);
      }
    });
  }
  idf(term: string): number {
    const n = this.postings.get(term)?.length ?? 0;
    return n === 0 ? 0 : Math.log(1 + (this.chunks.length - n + 0.5) / (n + 0.5));
  }
  score(q: Weights, k1 = 1.2, b = 0.75): Float64Array {
    const s = new Float64Array(this.chunks.length);
    for (const [t, w] of q) {
      const idf = this.idf(t);
      for (const [i, tf] of this.postings.get(t) ?? []) {
        const norm = k1 * (1 - b + (b * this.lengths[i]!) / this.average);
        s[i]! += (w * idf * (k1 + 1) * tf) / (tf + norm);
      }
    }
    return s;
  }
  /** The indices of the `n` best-scoring chunks with a score above 0. */
  top(s: Float64Array, n: number): number[] {
    const hits: number[] = [];
    for (let i = 0; i < s.length; i++) if (s[i]! > 0) hits.push(i);
    return hits.sort((x, y) => s[y]! - s[x]!).slice(0, n);
  }
}

/** The order the pipeline gives BM25's ranking (`lexicalOrder`), or a variant's. */
type Order = (hits: SearchHit[]) => SearchHit[];

/** What the pipeline returns for k from a scoring: 2k fetched, sections ordered, duplicates dropped. */
function ranking(e: Bm25, s: Float64Array, k: number, order: Order = lexicalOrder): ChunkMeta[] {
  const hits = e.top(s, Math.min(2 * k, 1000)).map(
    (i): SearchHit => ({
      id: String(i),
      content: e.chunks[i]!.content,
      meta: e.chunks[i]!.meta,
      score: s[i]!,
    }),
  );
  const seen = new Set<string>();
  const out: ChunkMeta[] = [];
  for (const h of order(hits)) {
    if (seen.has(h.content)) continue;
    seen.add(h.content);
    out.push(h.meta);
  }
  return out.slice(0, k);
}

// ------------------------------------------------------------------------------------ the variants

/** RM3: the query (weight λ) mixed with the `terms` heaviest terms of the `docs` best chunks. */
function rm3(e: Bm25, q: Weights, docs: number, terms: number, lambda: number, idf: boolean): Weights {
  const s = e.score(q);
  const top = e.top(s, docs);
  const total = top.reduce((a, i) => a + s[i]!, 0) || 1;
  const w = new Map<string, number>();
  for (const i of top) {
    const tf = new Map<string, number>();
    for (const t of e.chunks[i]!.terms) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, n] of tf) {
      if ((e.postings.get(t)?.length ?? 0) < 2) continue;
      const v = (n / e.lengths[i]!) * (s[i]! / total) * (idf ? e.idf(t) : 1);
      w.set(t, (w.get(t) ?? 0) + v);
    }
  }
  const expansion = [...w].sort((a, b) => b[1] - a[1]).slice(0, terms);
  const ez = expansion.reduce((a, [, v]) => a + v, 0) || 1;
  const out = new Map([...q].map(([t, v]) => [t, (lambda * v) / q.size]));
  for (const [t, v] of expansion) out.set(t, (out.get(t) ?? 0) + ((1 - lambda) * v) / ez);
  return out;
}

/** A chunk's score plus `alpha` × the best (or summed) score of its group's other chunks among the first 100. */
function evidence(e: Bm25, q: Weights, alpha: number, group: 'document' | 'section', sum: boolean) {
  const s = e.score(q);
  const key = (c: Chunk) =>
    group === 'document'
      ? String(c.meta.file_id)
      : `${c.meta.file_id}|${JSON.stringify(c.meta.headers ?? [])}`;
  const top = e.top(s, 100);
  const byGroup = new Map<string, number[]>();
  for (const i of top) byGroup.set(key(e.chunks[i]!), [...(byGroup.get(key(e.chunks[i]!)) ?? []), s[i]!]);
  const out = new Float64Array(s.length);
  for (const i of top) {
    const others = [...byGroup.get(key(e.chunks[i]!))!];
    others.splice(others.indexOf(s[i]!), 1);
    const extra = others.length === 0 ? 0 : sum ? others.reduce((a, b) => a + b, 0) : Math.max(...others);
    out[i] = s[i]! + alpha * extra;
  }
  return out;
}

/** Query-term pairs within `window` positions, as extra terms of weight `mu` (sequential dependence). */
function pairsOf(terms: readonly string[], window: number, ordered: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < terms.length; i++) {
    for (let j = i + 1; j <= i + window && j < terms.length; j++) {
      const [a, b] = [terms[i]!, terms[j]!];
      if (a !== b) out.push(ordered || a < b ? `${a} ${b}` : `${b} ${a}`);
    }
  }
  return out;
}

/** Score × (share of the query's terms the chunk holds)^power, plain or IDF-weighted (Lucene's classic coord). */
function coordination(e: Bm25, q: Weights, power: number, byIdf: boolean): Float64Array {
  const s = e.score(q);
  const held = new Float64Array(s.length);
  let total = 0;
  for (const t of q.keys()) {
    const w = byIdf ? e.idf(t) : e.postings.has(t) ? 1 : 0;
    total += w;
    for (const [i] of e.postings.get(t) ?? []) held[i]! += w;
  }
  if (total > 0) for (let i = 0; i < s.length; i++) s[i]! *= (held[i]! / total) ** power;
  return s;
}

/** The collection's compounds ending in a query term of 5+ letters (3+ letters before it), at weight `w`. */
function compoundHeads(e: Bm25, q: Weights, w: number): Weights {
  const out = new Map(q);
  for (const t of q.keys()) {
    if (t.length < 5 || /\d/.test(t)) continue;
    for (const u of e.postings.keys())
      if (u.length - t.length >= 3 && u.endsWith(t) && !out.has(u)) out.set(u, w);
  }
  return out;
}

/**
 * BM25F (Robertson, Zaragoza and Taylor 2004, the simple form): each field's term frequency
 * normalised by its own length (b per field) and weighted, the sum saturated once with k1; IDF over
 * the chunks as before. The heading field is the chunk's title and breadcrumb (what the contextual
 * header adds), the body its own text, so a word in the heading counts `weight` times and the
 * heading's length no longer dilutes the body's.
 */
class Bm25f {
  readonly postings = new Map<string, [number, number, number][]>();
  readonly avg: [number, number];
  constructor(
    readonly e: Bm25,
    readonly fields: readonly Fields[],
  ) {
    const sum = (f: keyof Fields) => fields.reduce((a, x) => a + x[f].length, 0) / fields.length || 1;
    this.avg = [sum('heading'), sum('body')];
    fields.forEach((f, i) => {
      const tf = new Map<string, [number, number]>();
      for (const t of f.heading) tf.set(t, [(tf.get(t)?.[0] ?? 0) + 1, tf.get(t)?.[1] ?? 0]);
      for (const t of f.body) tf.set(t, [tf.get(t)?.[0] ?? 0, (tf.get(t)?.[1] ?? 0) + 1]);
      for (const [t, [h, b]] of tf) {
        const list = this.postings.get(t) ?? [];
        list.push([i, h, b]);
        this.postings.set(t, list);
      }
    });
  }
  score(q: Weights, weight: number, bHeading: number, bBody = 0.75, k1 = 1.2): Float64Array {
    const s = new Float64Array(this.fields.length);
    for (const [t, w] of q) {
      const idf = this.e.idf(t);
      for (const [i, h, b] of this.postings.get(t) ?? []) {
        const f = this.fields[i]!;
        const nh = 1 - bHeading + (bHeading * f.heading.length) / this.avg[0];
        const nb = 1 - bBody + (bBody * f.body.length) / this.avg[1];
        const tf = (weight * h) / nh + b / nb;
        s[i]! += (w * idf * (k1 + 1) * tf) / (k1 + tf);
      }
    }
    return s;
  }
}

/** Each chunk's heading and body terms, analysed as the index analyses them. */
function fieldsOf(chunks: readonly Chunk[], language: Bm25Language): Fields[] {
  const analyzer = new LexicalAnalyzer(language);
  return chunks.map((c) => {
    const lines = [c.meta.title, ...(c.meta.headers ?? [])].filter((l): l is string => !!l?.trim());
    return {
      heading: analyzer.documentTerms([...new Set(lines)].join('\n'), language),
      body: analyzer.documentTerms(c.content, language),
    };
  });
}

/**
 * Query-side compound splitting for terms the collection does not hold: a query term no chunk has
 * (`jernbanestrækning`) is also searched as its two parts when both are the collection's own terms
 * (`jernban` + `stræk`, each part stemmed, a linking `s` or `e` allowed, parts of `min`+ letters;
 * of several splits the one whose rarer part is commonest, Koehn and Knight's test), at weight `w`.
 * Terms the collection holds are left alone, so a question in the text's own words is unchanged.
 */
function oovParts(e: Bm25, q: Weights, stem: (word: string) => string | undefined, min: number, w: number) {
  const out = new Map(q);
  const df = (t: string | undefined) => (t ? (e.postings.get(t)?.length ?? 0) : 0);
  for (const t of q.keys()) {
    if (e.postings.has(t) || t.length < 2 * min || /\d/.test(t)) continue;
    let best: [string, string, number] | undefined;
    for (let i = min; i <= t.length - min; i++) {
      const tail = stem(t.slice(i));
      for (const head of [t.slice(0, i), t.slice(0, i - 1)]) {
        if (head.length < min || (head !== t.slice(0, i) && !/[se]$/.test(t.slice(0, i)))) continue;
        const h = e.postings.has(head) ? head : stem(head);
        const score = Math.min(df(h), df(tail));
        if (h && tail && score > 0 && (!best || score > best[2])) best = [h, tail, score];
      }
    }
    if (best) for (const p of best.slice(0, 2) as string[]) if (!out.has(p)) out.set(p, w);
  }
  return out;
}

type Variant = [
  name: string,
  score: (e: Bm25, terms: string[], pairs: Map<string, Bm25>, f?: Bm25f, text?: string) => Float64Array,
  order?: Order | undefined,
  /** A document-side variant: the chunks with other terms (e.g. analysed again from another text). */
  reindex?: (chunks: readonly Chunk[]) => Chunk[],
];

// ------------------------------------------------------------- issue 33, third session's variants

/** The chunks analysed again, as ingestion analyses them, from another text, title or breadcrumb. */
function reanalysed(
  chunks: readonly Chunk[],
  change: (c: Chunk) => { content: string; title?: string | undefined; headers?: string[] | undefined },
): Chunk[] {
  const analyzer = new LexicalAnalyzer('english');
  return chunks.map((c) => {
    const { content, title, headers } = change(c);
    const terms = analyzer.chunk(content, { title, headers }, c.languages, 'english', false).terms;
    return { ...c, terms };
  });
}

const headersOf = (c: Chunk) => (Array.isArray(c.meta.headers) ? c.meta.headers.map(String) : []);
const titleOf = (c: Chunk) => (typeof c.meta.title === 'string' ? c.meta.title : undefined);

/** Each chunk without the text it shares with the chunk before it in its document (the overlap). */
function withoutOverlap(chunks: readonly Chunk[]): Chunk[] {
  const previousEnd = new Map<Chunk, number>();
  const byFile = new Map<string, Chunk[]>();
  for (const c of chunks)
    byFile.set(String(c.meta.file_id), [...(byFile.get(String(c.meta.file_id)) ?? []), c]);
  for (const list of byFile.values()) {
    list.sort((a, b) => Number(a.meta.split_id) - Number(b.meta.split_id));
    for (let i = 1; i < list.length; i++) previousEnd.set(list[i]!, Number(list[i - 1]!.meta.char_end));
  }
  return reanalysed(chunks, (c) => {
    const start = Number(c.meta.char_start);
    const end = previousEnd.get(c) ?? start;
    // A continuation chunk's content starts with its repeated heading line (the lead), then its text.
    const lead = c.content.length - (Number(c.meta.char_end) - start);
    const content = end <= start ? c.content : c.content.slice(0, lead) + c.content.slice(lead + end - start);
    return { content, title: titleOf(c), headers: headersOf(c) };
  });
}

const HYPHENATED_WORD = /[\p{L}\p{N}]+(?:[-/][\p{L}\p{N}]+)+/gu;
/** A text's hyphenated words whole, as one term each (`IL-10` → `il_10`). */
const wholeWords = (text: string) =>
  (text.toLowerCase().match(HYPHENATED_WORD) ?? []).map((w) => w.replace(/[-/]/g, '_'));

/** The analysed terms of a text's hyphenated words closed up (`non-homologous` → `nonhomolog`). */
function closedUp(text: string, analyzer: LexicalAnalyzer, language: Bm25Language): string[] {
  const words = text.match(/\p{L}+(?:-\p{L}+)+/gu) ?? [];
  return words.flatMap((w) => analyzer.query(w.replace(/-/g, ''), [language]).terms.slice(0, 1));
}

/** Section-level BM25: each section (document and breadcrumb) one document of all its chunks' terms. */
function sectionScores(e: Bm25): (q: Weights) => Float64Array {
  const keys = e.chunks.map((c) => `${c.meta.file_id}|${headersOf(c).join('|')}`);
  const ids = new Map([...new Set(keys)].map((k, i) => [k, i]));
  const sections: Chunk[] = [...ids.keys()].map(() => ({ terms: [], meta: {} as ChunkMeta, content: '' }));
  for (let i = 0; i < e.chunks.length; i++) sections[ids.get(keys[i]!)!]!.terms.push(...e.chunks[i]!.terms);
  const s = new Bm25(sections);
  return (q) => {
    const bySection = s.score(q);
    return Float64Array.from(keys, (k) => bySection[ids.get(k)!]!);
  };
}

function thirdSession(): Variant[] {
  const v: Variant[] = [];
  const score = (e: Bm25, t: string[]) => e.score(each(t));
  const NUMBER = /^\s*\d+(?:\.\d+)*\.?\s+/;
  const headerVariants: [string, (c: Chunk) => { title?: string; headers?: string[] }][] = [
    ['no contextual header', () => ({})],
    ['header: the innermost heading only', (c) => ({ headers: headersOf(c).slice(-1) })],
    ['header: the breadcrumb without the title', (c) => ({ headers: headersOf(c) })],
    ['header: the breadcrumb without the chapter', (c) => ({ headers: headersOf(c).slice(1) })],
  ];
  for (const [name, header] of headerVariants)
    v.push([
      name,
      score,
      undefined,
      (chunks) => reanalysed(chunks, (c) => ({ content: c.content, ...header(c) })),
    ]);
  v.push([
    'section numbers stripped from headings',
    score,
    undefined,
    (chunks) =>
      reanalysed(chunks, (c) => ({
        content: c.content.replace(/^(#{1,6}[ \t]+)\d+(?:\.\d+)*\.?[ \t]+/gm, '$1'),
        title: titleOf(c)?.replace(NUMBER, ''),
        headers: headersOf(c).map((h) => h.replace(NUMBER, '')),
      })),
  ]);
  const innermost = new WeakMap<Bm25, Set<string>[]>();
  const analyzer = new LexicalAnalyzer('english');
  for (const w of [0.1, 0.25, 0.5])
    v.push([
      `innermost heading bonus × ${w} IDF`,
      (e, t) => {
        const own =
          innermost.get(e) ??
          e.chunks.map((c) => {
            const h = headersOf(c).at(-1);
            return new Set(h ? analyzer.chunk(h, {}, c.languages, 'english', false).terms : []);
          });
        innermost.set(e, own);
        const s = e.score(each(t));
        for (let i = 0; i < s.length; i++)
          if (s[i]! > 0) for (const q of new Set(t)) if (own[i]!.has(q)) s[i]! += w * e.idf(q);
        return s;
      },
    ]);
  const bySection = new WeakMap<Bm25, (q: Weights) => Float64Array>();
  for (const w of [0.1, 0.25, 0.5])
    v.push([
      `+ section BM25 × ${w}`,
      (e, t) => {
        const sections = bySection.get(e) ?? sectionScores(e);
        bySection.set(e, sections);
        const s = e.score(each(t));
        const g = sections(each(t));
        return s.map((x, i) => (x > 0 ? x + w * g[i]! : x));
      },
    ]);
  v.push(['overlap with the previous chunk not indexed', score, undefined, withoutOverlap]);
  const whole = (chunks: readonly Chunk[]) =>
    chunks.map((c) => ({ ...c, terms: [...c.terms, ...wholeWords(c.content)] }));
  for (const w of [0.5, 1, 2])
    v.push([
      `hyphenated words indexed whole, query × ${w}`,
      (e, t, _p, _f, text) => {
        const q = each(t);
        for (const x of wholeWords(text ?? '')) if (!q.has(x)) q.set(x, w);
        return e.score(q);
      },
      undefined,
      whole,
    ]);
  for (const w of [0.5, 1])
    v.push([
      `hyphenated query words also closed up × ${w}`,
      (e, t, _p, _f, text) => {
        const q = each(t);
        const language: Bm25Language = e.chunks.some((c) => c.languages?.includes('da'))
          ? 'danish'
          : 'english';
        for (const x of closedUp(text ?? '', analyzer, language)) if (!q.has(x)) q.set(x, w);
        return e.score(q);
      },
    ]);
  // Snowball keeps an acronym's plural apart from it (`mRNAs` → `mrnas`, `mRNA` → `mrna`).
  const ACRONYM_PLURAL = /\b[a-z]{0,3}[A-Z][A-Z0-9]+s\b/g;
  const singulars = (text: string) =>
    (text.match(ACRONYM_PLURAL) ?? []).flatMap((w) =>
      analyzer.query(w.slice(0, -1), ['english']).terms.slice(0, 1),
    );
  const withSingulars = (chunks: readonly Chunk[]) =>
    chunks.map((c) => ({ ...c, terms: [...c.terms, ...singulars(c.content)] }));
  v.push(['acronym plurals also indexed singular', score, undefined, withSingulars]);
  v.push([
    'acronym plurals also indexed and searched singular',
    (e, t, _p, _f, text) => {
      const q = each(t);
      for (const x of singulars(text ?? '')) if (!q.has(x)) q.set(x, 1);
      return e.score(q);
    },
    undefined,
    withSingulars,
  ]);
  for (const [k1, b] of [
    [1.2, 0.6],
    [1.2, 0.65],
    [1, 0.75],
  ] as const)
    v.push([`BM25 k1 ${k1} b ${b}`, (e, t) => e.score(each(t), k1, b)]);
  return v;
}

function variants(): Variant[] {
  const v: Variant[] = [['LanceDB BM25, the default', (e, t) => e.score(each(t))]];
  for (const k1 of [0.6, 0.9, 1.2, 1.5, 2]) {
    for (const b of [0.3, 0.5, 0.75, 0.9]) {
      if (k1 !== 1.2 || b !== 0.75) v.push([`BM25 k1 ${k1} b ${b}`, (e, t) => e.score(each(t), k1, b)]);
    }
  }
  for (const [docs, terms, lambda] of [
    [3, 5, 0.8],
    [5, 5, 0.8],
    [5, 10, 0.9],
    [10, 10, 0.9],
    [10, 10, 0.95],
    [3, 5, 0.95],
    [5, 20, 0.6],
  ] as const) {
    for (const idf of [false, true]) {
      v.push([
        `RM3 ${docs} chunks, ${terms} terms, λ ${lambda}${idf ? ', IDF' : ''}`,
        (e, t) => e.score(rm3(e, each(t), docs, terms, lambda, idf)),
      ]);
    }
  }
  for (const group of ['document', 'section'] as const) {
    for (const [alpha, sum] of [
      [0.1, false],
      [0.3, false],
      [0.1, true],
    ] as const) {
      v.push([
        `${group} evidence, ${sum ? 'sum' : 'best'} × ${alpha}`,
        (e, t) => evidence(e, each(t), alpha, group, sum),
      ]);
    }
  }
  for (const [window, ordered] of [
    [1, true],
    [2, false],
    [4, false],
  ] as const) {
    for (const mu of [0.1, 0.2, 0.4]) {
      const name = `proximity: pairs ${ordered ? 'adjacent, in order' : `within ${window}`}, × ${mu}`;
      v.push([
        name,
        (e, t, pairs) => {
          const s = e.score(each(t));
          const index = pairs.get(`${window} ${ordered}`)!;
          const extra = index.score(each(pairsOf(t, window, ordered).filter((p) => index.postings.has(p))));
          return s.map((x, i) => x + mu * extra[i]!);
        },
      ]);
    }
  }
  for (const power of [0.5, 1, 2]) {
    for (const byIdf of [false, true])
      v.push([
        `coordination^${power}${byIdf ? ', IDF' : ''}`,
        (e, t) => coordination(e, each(t), power, byIdf),
      ]);
  }
  for (const w of [0.1, 0.15, 0.25])
    v.push([`compound heads × ${w}`, (e, t) => e.score(compoundHeads(e, each(t), w))]);
  for (const [weight, bh] of [
    [0, 0.75],
    [0.25, 0.75],
    [0.5, 0.75],
    [0.5, 0.3],
    [1, 0.75],
    [1, 0.3],
    [2, 0.75],
    [3, 0.75],
    [2, 0.3],
    [3, 0.3],
    [5, 0.3],
    [2, 0],
  ] as const)
    v.push([`BM25F heading × ${weight}, b ${bh}`, (_e, t, _p, f) => f!.score(each(t), weight, bh)]);
  const danish = new LexicalAnalyzer('danish');
  const stem = (word: string) => danish.query(word, ['danish']).terms[0];
  for (const [min, w] of [
    [3, 1],
    [4, 1],
    [4, 0.5],
    [5, 1],
  ] as const)
    v.push([
      `compound parts of unknown query terms, ${min}+ letters, × ${w}`,
      (e, t) => e.score(oovParts(e, each(t), stem, min, w)),
    ]);
  // The order after BM25: further chunks of a section lowered by another factor (1: not at all, as
  // before issue 33's third session; 0: a section's best chunk first, its others after every section's).
  for (const factor of [1, 0.9, 0.7, 0])
    v.push([
      `section repeats × ${factor}`,
      (e, t) => e.score(each(t)),
      (hits) => sectionRepeatsDown(subsectionsFirst(hits, SUBSECTION_RATIO), factor),
    ]);
  v.push([
    'question words hvad, hvor left out',
    (e, t) => e.score(each(t.filter((x) => x !== 'hvad' && x !== 'hvor'))),
  ]);
  v.push(...thirdSession());
  const only = args.variants ? new RegExp(args.variants, 'iu') : undefined;
  return v.filter(([name]) => !only || name === v[0]![0] || only.test(name));
}

/** The pair indexes the proximity variants read: each chunk's term pairs as the terms of a second BM25. */
function pairIndexes(chunks: readonly Chunk[]): Map<string, Bm25> {
  const out = new Map<string, Bm25>();
  for (const [window, ordered] of [
    [1, true],
    [2, false],
    [4, false],
  ] as const) {
    out.set(
      `${window} ${ordered}`,
      new Bm25(chunks.map((c) => ({ ...c, terms: pairsOf(c.terms, window, ordered) }))),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------- the sets

type Row = Map<string, string[]>;
const f3 = (x: number) => x.toFixed(4);
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

async function scifact(list: Variant[], rows: Row): Promise<void> {
  const e = new Bm25(await chunksOf('scifact'));
  const pairs = args.variants && !/proximity/iu.test(args.variants) ? new Map() : pairIndexes(e.chunks);
  const f = list.some(([n]) => n.startsWith('BM25F'))
    ? new Bm25f(e, fieldsOf(e.chunks, 'english'))
    : undefined;
  const dir = `${benchData('scifact')}/`;
  const qrels = parseQrels(await readFile(`${dir}qrels-train.tsv`, 'utf8'));
  const queries = parseQueries(await readFile(`${dir}queries-train.jsonl`, 'utf8')).filter((q) =>
    qrels.has(q.id),
  );
  const analyzer = new LexicalAnalyzer('english');
  const terms = new Map(queries.map((q) => [q.text, analyzer.query(q.text, ['english']).terms]));
  for (const [name, score, order, reindex] of list) {
    const scored = new Map<string, Float64Array>();
    const ve = reindex ? new Bm25(reindex(e.chunks)) : e;
    const search = async (text: string, _c: readonly string[], k: number) => {
      const s = scored.get(text) ?? score(ve, terms.get(text)!, pairs, f, text);
      scored.set(text, s);
      return ranking(ve, s, k, order);
    };
    const base = { search, queries, qrels, collectionNames: ['bench'] };
    const ten = (await evaluate({ ...base, k: 10 })).metrics;
    const pooled = (await evaluate({ ...base, k: 100 })).metrics;
    rows.set(name, [
      f3(ten['ndcg@10']),
      f3(pooled['ndcg@10']),
      f3(pooled['recall@10']),
      f3(pooled['mrr@10']),
    ]);
    process.stderr.write(`scifact: ${name}\n`);
  }
}

async function danish(list: Variant[], rows: Row): Promise<void> {
  const e = new Bm25(await chunksOf('danish'));
  const pairs = args.variants && !/proximity/iu.test(args.variants) ? new Map() : pairIndexes(e.chunks);
  const f = list.some(([n]) => n.startsWith('BM25F'))
    ? new Bm25f(e, fieldsOf(e.chunks, 'danish'))
    : undefined;
  const { questions, audit, nearest } = await danishSet();
  const analyzer = new LexicalAnalyzer('danish');
  const language: Bm25Language[] = ['danish'];
  for (const [name, score, order, reindex] of list) {
    const ve = reindex ? new Bm25(reindex(e.chunks)) : e;
    const search = async (text: string, k: number) =>
      ranking(ve, score(ve, analyzer.query(text, language).terms, pairs, f, text), k, order);
    const r = await evalDanish(search, questions, nearest, audit);
    const scifactCells = rows.get(name)?.length ? rows.get(name)! : ['–', '–', '–', '–'];
    rows.set(name, [...scifactCells, ...r.audited.map(pct), ...r.answerable.map(pct)]);
  }
}

const list = variants();
const rows: Row = new Map(list.map(([name]) => [name, []]));
if (args.only !== 'danish') await scifact(list, rows);
if (args.only !== 'scifact') await danish(list, rows);
const header = [
  'variant',
  'SciFact nDCG@10 (10 chunks)',
  'nDCG@10 (pooled)',
  'Recall@10',
  'MRR@10',
  'Danish top-1 (audited)',
  'top-5 (audited)',
  'top-1 (answerable)',
  'top-5 (answerable)',
];
const table = [header, ...[...rows].map(([name, cells]) => [name, ...cells])];
const widths = header.map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length)));
for (const r of table)
  console.log(
    r
      .map((c, i) => (c ?? '').padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
