/**
 * Language detectors compared through Kilde's own sampling and one-third rule
 * (`detectLanguagesWith` in src/extract/languages.ts): tinyld's heavy model (Kilde's detector until
 * 2026-11-22), its light and normal models, and eld (Nito-ELD) at each of its database sizes.
 * Each detector runs in a fresh process: model load (wall and CPU) and RSS before/after the load,
 * then CPU per text over 1000 SciFact abstracts (title + abstract), the 48 Danish chapters, and 48
 * mixed documents (a Danish chapter followed by English abstracts of about the same length). The
 * languages each reports are compared with tinyld heavy's, document by document. Prints figures;
 * asserts nothing.
 * Usage: npm run bench:languages [-- --scifact N] [--only name,name]
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { detectLanguagesWith, type SampleClassifier } from '../src/extract/languages.js';
import { benchData } from './lib/data.js';

const { values } = parseArgs({
  options: {
    child: { type: 'string' },
    scifact: { type: 'string', default: '1000' },
    only: { type: 'string' },
  },
});

interface TinyldLike {
  detectAll(text: string): Array<{ lang: string; accuracy: number }>;
}
interface EldLike {
  detect(text: string): { language: string; getScores(): Record<string, number> };
}

/** How each candidate is loaded, and its classifier for one sample (ISO 639-1, most likely first). */
const CANDIDATES: Record<string, () => Promise<SampleClassifier>> = {
  'tinyld-heavy': async () => tinyld('tinyld/heavy'),
  'tinyld-normal': async () => tinyld('tinyld'),
  'tinyld-light': async () => tinyld('tinyld/light'),
  'eld-extrasmall': async () => eld('eld/extrasmall'),
  'eld-small': async () => eld('eld/small'),
  'eld-medium': async () => eld('eld/medium'),
  'eld-large': async () => eld('eld/large'),
};

function tinyld(entry: string): SampleClassifier {
  const lib = createRequire(import.meta.url)(entry) as TinyldLike;
  return (sample) => {
    const [top] = lib.detectAll(sample).filter((r) => /^[a-z]{2}$/.test(r.lang));
    return top ? { lang: top.lang, score: top.accuracy } : undefined;
  };
}

function eld(entry: string): SampleClassifier {
  // eld exports its entries for `import` only: resolved as ESM, then loaded synchronously as Kilde does.
  const file = fileURLToPath(import.meta.resolve(entry));
  const lib = (createRequire(import.meta.url)(file) as { eld: EldLike }).eld;
  return (sample) => {
    const r = lib.detect(sample);
    if (!r.language) return undefined;
    return { lang: r.language, score: r.getScores()[r.language] ?? 0 };
  };
}

interface Corpora {
  scifact: string[];
  danish: string[];
  mixed: string[];
}

function corpora(n: number): Corpora {
  const scifact = readFileSync(benchData('scifact', 'corpus.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(0, n)
    .map((l) => {
      const d = JSON.parse(l) as { title: string; text: string };
      return `${d.title}\n\n${d.text}`;
    });
  const dir = benchData('da-citizenship', 'corpus');
  const danish = readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'));
  let next = 0;
  const mixed = danish.map((da) => {
    let en = '';
    while (en.length < da.length) en += `${scifact[next++ % scifact.length]}\n\n`;
    return `${da}\n\n${en}`;
  });
  return { scifact, danish, mixed };
}

interface ChildResult {
  loadMs: number;
  loadCpuMs: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  sets: Record<keyof Corpora, { cpuMsPerText: number; langs: string[][] }>;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
}

async function child(name: string): Promise<void> {
  const load = CANDIDATES[name];
  if (!load) throw new Error(`unknown detector ${name}`);
  const data = corpora(Number(values.scifact));
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const classify = await load();
  const loadCpuMs = cpuMs(c0);
  const loadMs = performance.now() - t0;
  const rssAfter = process.memoryUsage().rss;
  const sets = {} as ChildResult['sets'];
  for (const set of ['scifact', 'danish', 'mixed'] as const) {
    const texts = data[set];
    detectLanguagesWith(texts[0] ?? '', classify); // first call out of the figure
    const c1 = process.cpuUsage();
    const langs = texts.map((t) => detectLanguagesWith(t, classify));
    sets[set] = { cpuMsPerText: cpuMs(c1) / texts.length, langs };
  }
  const result: ChildResult = {
    loadMs,
    loadCpuMs,
    rssBeforeMiB: rssBefore / 2 ** 20,
    rssAfterMiB: rssAfter / 2 ** 20,
    sets,
  };
  process.stdout.write(JSON.stringify(result));
}

function counts(langs: string[][]): string {
  const m = new Map<string, number>();
  for (const l of langs) m.set(l.join('+'), (m.get(l.join('+')) ?? 0) + 1);
  return [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([k, v]) => `${k || '∅'} ${v}`)
    .join(', ');
}

function parent(): void {
  const names = values.only ? values.only.split(',') : Object.keys(CANDIDATES);
  if (!names.includes('tinyld-heavy')) names.unshift('tinyld-heavy');
  const self = fileURLToPath(import.meta.url);
  // The children run the built code (dist/) with no TypeScript loader, as `kilde` runs: tsx would
  // transform the detectors' large model modules and triple their load time and memory.
  execFileSync('npx', ['tsc', '-b', 'tsconfig.build.json'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
  });
  const useDist = fileURLToPath(new URL('./lib/use-dist.mjs', import.meta.url));
  const results = new Map<string, ChildResult>();
  for (const name of names) {
    const out = execFileSync(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        '--import',
        useDist,
        self,
        '--child',
        name,
        '--scifact',
        String(values.scifact),
      ],
      { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 },
    );
    results.set(name, JSON.parse(out) as ChildResult);
  }
  const load = execFileSync('uptime', { encoding: 'utf8' }).trim();
  const base = results.get('tinyld-heavy');
  if (!base) throw new Error('no tinyld-heavy result');
  console.log(`load: ${load}`);
  console.log('\n| Detector | load wall / CPU ms | RSS +MiB | CPU ms/text: SciFact / Danish / mixed |');
  console.log('|---|---|---|---|');
  for (const [name, r] of results) {
    const s = r.sets;
    console.log(
      `| ${name} | ${r.loadMs.toFixed(0)} / ${r.loadCpuMs.toFixed(0)} | ${(r.rssAfterMiB - r.rssBeforeMiB).toFixed(0)} | ` +
        `${s.scifact.cpuMsPerText.toFixed(3)} / ${s.danish.cpuMsPerText.toFixed(3)} / ${s.mixed.cpuMsPerText.toFixed(3)} |`,
    );
  }
  console.log('\n| Detector | set | same list as tinyld heavy | languages reported (top 4) |');
  console.log('|---|---|---|---|');
  for (const [name, r] of results) {
    for (const set of ['scifact', 'danish', 'mixed'] as const) {
      const mine = r.sets[set].langs;
      const ref = base.sets[set].langs;
      const same = mine.filter((l, i) => l.join('+') === ref[i]?.join('+')).length;
      const key = (l: string[] | undefined) => [...(l ?? [])].sort().join('+');
      const sameSet = mine.filter((l, i) => key(l) === key(ref[i])).length;
      console.log(`| ${name} | ${set} | ${same} (as sets ${sameSet}) of ${mine.length} | ${counts(mine)} |`);
    }
  }
}

if (values.child) await child(values.child);
else parent();
