import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { plainlyEnglish } from '../embed/bm25/analysis.js';

interface Eld {
  detect(text: string): { language: string; getScores(): Record<string, number> };
}
/** eld's database as its entry files hand it to a detector (`{type, languages, ngrams}`). */
type EldData = Record<string, unknown>;
let eld: Eld | undefined;

/** Where `npm run build` writes eld's table as JSON (scripts/eld-table.mjs), beside this module's build. */
export const ELD_TABLE_JSON = new URL('./eld-extrasmall.json', import.meta.url);

/**
 * eld's (Nito-ELD) smallest database, 60 languages, loaded the first time a text is classified, not
 * by every `kilde` command that imports this. The build writes the table as JSON beside this module
 * (scripts/eld-table.mjs): `JSON.parse` of it takes ≈80 ms and ≈24 MiB in a worker, where evaluating
 * eld's own module (a 950 KB object literal) took ≈0.16–0.28 s and ≈56–84 MiB, for the same table.
 * Without that file (a run from src/, a build by `tsc` alone) or with one written for another eld
 * version, eld's module is loaded as before: its ES module resolved for `import` (the package exports
 * no `require` entry) and then required.
 */
function lib(): Eld {
  eld ??= loadEld(ELD_TABLE_JSON);
  return eld;
}

/** A detector over eld's extrasmall table: from `json` when it holds the installed eld's, else eld's module. */
export function loadEld(json: URL): Eld {
  const entry = fileURLToPath(import.meta.resolve('eld/extrasmall'));
  const require = createRequire(import.meta.url);
  const table = readTable(json, entry);
  if (!table) return (require(entry) as { eld: Eld }).eld;
  const { createEld } = require(fileURLToPath(new URL('../languageDetector.js', pathToFileURL(entry)))) as {
    createEld(): { instance: Eld; loadData(data: EldData): void };
  };
  const { instance, loadData } = createEld();
  loadData(table);
  return instance;
}

/** The table in `json` when it was written from the installed eld (its version recorded), else undefined. */
function readTable(json: URL, entry: string): EldData | undefined {
  let text: string;
  try {
    text = readFileSync(json, 'utf8');
  } catch {
    return undefined;
  }
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', pathToFileURL(entry)), 'utf8')) as {
    version: string;
  };
  const written = JSON.parse(text) as { eld?: string; data?: EldData };
  return written.eld === pkg.version && written.data ? written.data : undefined;
}

/**
 * ISO 639-1 → 639-3 for the languages eld reports and the usual others, as Kreuzberg reports them
 * in `detected_languages` (Mandarin `cmn`, Iranian Persian `pes`, Bokmål `nob` and Standard Latvian
 * `lvs`, as tinyld's table, used before, gave them).
 */
const ISO3: Record<string, string> = {
  af: 'afr',
  am: 'amh',
  ar: 'ara',
  az: 'aze',
  be: 'bel',
  bg: 'bul',
  bn: 'ben',
  bs: 'bos',
  ca: 'cat',
  cs: 'ces',
  cy: 'cym',
  da: 'dan',
  de: 'deu',
  el: 'ell',
  en: 'eng',
  eo: 'epo',
  es: 'spa',
  et: 'est',
  eu: 'eus',
  fa: 'pes',
  fi: 'fin',
  fr: 'fra',
  ga: 'gle',
  gl: 'glg',
  gu: 'guj',
  he: 'heb',
  hi: 'hin',
  hr: 'hrv',
  hu: 'hun',
  hy: 'hye',
  id: 'ind',
  is: 'isl',
  it: 'ita',
  ja: 'jpn',
  ka: 'kat',
  kk: 'kaz',
  km: 'khm',
  kn: 'kan',
  ko: 'kor',
  ku: 'kur',
  la: 'lat',
  lo: 'lao',
  lt: 'lit',
  lv: 'lvs',
  mk: 'mkd',
  ml: 'mal',
  mn: 'mon',
  mr: 'mar',
  ms: 'msa',
  my: 'mya',
  nb: 'nob',
  ne: 'nep',
  nl: 'nld',
  nn: 'nno',
  no: 'nob',
  or: 'ori',
  pa: 'pan',
  pl: 'pol',
  pt: 'por',
  rn: 'run',
  ro: 'ron',
  ru: 'rus',
  si: 'sin',
  sk: 'slk',
  sl: 'slv',
  sq: 'sqi',
  sr: 'srp',
  sv: 'swe',
  sw: 'swa',
  ta: 'tam',
  te: 'tel',
  th: 'tha',
  tk: 'tuk',
  tl: 'tgl',
  tr: 'tur',
  tt: 'tat',
  uk: 'ukr',
  ur: 'urd',
  uz: 'uzb',
  vi: 'vie',
  vo: 'vol',
  yi: 'yid',
  yo: 'yor',
  zh: 'cmn',
};

/** The reverse of ISO3 (`nob` is Bokmål, `nb`, below). */
const ISO1 = new Map(Object.entries(ISO3).map(([one, three]) => [three, one]));

/** ISO 639-3 (and 639-2/B) codes of the usual languages, to 639-1 (macrolanguages and their main member). */
const EXTRA_ISO3: Record<string, string> = {
  zho: 'zh',
  chi: 'zh',
  ger: 'de',
  fre: 'fr',
  dut: 'nl',
  gre: 'el',
  ell: 'el',
  per: 'fa',
  fas: 'fa',
  cze: 'cs',
  slo: 'sk',
  rum: 'ro',
  ice: 'is',
  wel: 'cy',
  arm: 'hy',
  geo: 'ka',
  baq: 'eu',
  mac: 'mk',
  alb: 'sq',
  bur: 'my',
  may: 'ms',
  msa: 'ms',
  nob: 'nb',
  nno: 'nn',
  nor: 'no',
  ara: 'ar',
  arb: 'ar',
  est: 'et',
  ekk: 'et',
  lav: 'lv',
  lvs: 'lv',
  aze: 'az',
  azj: 'az',
  uzb: 'uz',
  uzn: 'uz',
  swa: 'sw',
  swh: 'sw',
  zsm: 'ms',
  pes: 'fa',
};

/** Maps an ISO 639-3 / 639-2 / 639-1 code (or a locale like `en-US`) to ISO 639-1; undefined when unknown. */
export function toIso6391(code: string): string | undefined {
  const c = code.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  if (/^[a-z]{2}$/.test(c)) return c;
  if (!/^[a-z]{3}$/.test(c)) return undefined;
  const known = EXTRA_ISO3[c] ?? ISO1.get(c);
  if (known) return known;
  // ICU's language aliases (CLDR) map the other 639-3 and 639-2/B codes that have a 639-1 form.
  const canonical = Intl.getCanonicalLocales(c)[0] ?? '';
  return /^[a-z]{2}$/.test(canonical) ? canonical : undefined;
}

/** ISO 639-1 → 639-3, the form Kreuzberg reports in `detected_languages`. */
export function toIso6393(code: string): string {
  return ISO3[code] ?? code;
}

const SAMPLE = 2000;
const MAX_SAMPLES = 5;

/**
 * Detects the languages of a document, most likely first. Up to five evenly spaced samples are
 * classified; a language is reported when it leads at least a third of them, so a bilingual
 * document reports both while boilerplate (language menus, reference lists) does not add noise.
 * Only the samples are cleaned and read, so a long document costs no more than a short one (this
 * runs on the event loop, after extraction).
 */
export function detectLanguages(text: string): string[] {
  return decide(samplesOf(text));
}

/**
 * One decision per document over its samples: a document whose every sample is plainly English
 * (`plainlyEnglish`: a tenth of its words English-only stop words, twice the Danish ones, and words
 * only English uses one in thirty) is English without the detector, so an English document never
 * loads eld's table (≈0.16 s of CPU and ≈60–80 MiB per worker) nor runs it (≈0.3–0.5 ms per
 * sample). Danish is left to eld: Norwegian and Swedish share too many of its stop words. Any other
 * document is read by eld as before. On the sets of `npm run bench:languages` (SciFact's 5,183
 * abstracts, the 48 Danish chapters, 48 mixed documents) both ways give the same languages.
 */
function decide(samples: readonly string[]): string[] {
  if (samples.length > 0 && samples.every(plainlyEnglish)) return ['en'];
  return rankSamples(samples, topLanguage);
}

/**
 * The most likely ISO 639-1 language of one sample and its score; undefined when none. `scored`
 * false: the score is not used (a text of one sample), so a classifier may leave it 0.
 */
export type SampleClassifier = (
  sample: string,
  scored: boolean,
) => { lang: string; score: number } | undefined;

/**
 * `detectLanguages` with another classifier for the samples: the same sampling and the same
 * one-third rule. For `bench/languages.ts`, which compares detectors through Kilde's own logic.
 */
export function detectLanguagesWith(text: string, classify: SampleClassifier): string[] {
  return rankSamples(samplesOf(text), classify);
}

function topLanguage(sample: string, scored: boolean): { lang: string; score: number } | undefined {
  const result = lib().detect(sample);
  if (!result.language) return undefined;
  // eld's scores cost about a third of a short text's detection; only ties between samples need them.
  return { lang: result.language, score: scored ? (result.getScores()[result.language] ?? 0) : 0 };
}

/**
 * Where `detectLanguages` reads a text of `length` characters that is too long to clean whole:
 * the [start, end) windows whose texts `detectLanguagesInWindows` takes. Undefined for a short
 * text (it is read whole). A streamed text (a large plain-text file) reads just these windows and
 * gets exactly the languages the whole text would.
 */
export function languageWindows(length: number): Array<[number, number]> | undefined {
  const window = SAMPLE * 2;
  if (length <= MAX_SAMPLES * window) return undefined;
  const step = (length - window) / (MAX_SAMPLES - 1);
  return Array.from({ length: MAX_SAMPLES }, (_, i) => {
    const start = Math.round(i * step);
    return [start, start + window];
  });
}

/** `detectLanguages` of a long text, given the texts of its `languageWindows`. */
export function detectLanguagesInWindows(windows: readonly string[]): string[] {
  const samples: string[] = [];
  for (const w of windows) {
    const sample = clean(w).slice(0, SAMPLE);
    if (sample.length >= 20) samples.push(sample);
  }
  return decide(samples);
}

function rankSamples(samples: readonly string[], classify: SampleClassifier): string[] {
  const leads = new Map<string, { count: number; score: number }>();
  // One sample leads alone: its score breaks no tie.
  const scored = samples.length > 1;
  for (const sample of samples) {
    const top = classify(sample, scored);
    if (!top) continue;
    const entry = leads.get(top.lang) ?? { count: 0, score: 0 };
    leads.set(top.lang, { count: entry.count + 1, score: entry.score + top.score });
  }
  const needed = Math.max(1, Math.ceil(samples.length / 3));
  const ranked = [...leads.entries()].sort((a, b) => b[1].count - a[1].count || b[1].score - a[1].score);
  const kept = ranked.filter(([, v]) => v.count >= needed).map(([lang]) => lang);
  return kept.length > 0 ? kept : ranked.slice(0, 1).map(([lang]) => lang);
}

/** Markup and table rules out, whitespace collapsed. */
function clean(s: string): string {
  return s
    .replace(/[|#*_`>[\]()-]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Up to five samples of about SAMPLE cleaned characters, evenly spaced over the text. A long text is
 * cleaned only in its sample windows, read at twice the sample size because Markdown (tables
 * especially) shrinks when cleaned.
 */
function samplesOf(text: string): string[] {
  const window = SAMPLE * 2;
  if (text.length <= MAX_SAMPLES * window) {
    // Short enough to clean whole and space the samples over the cleaned text.
    const all = clean(text);
    if (all.length < 20) return [];
    const n = Math.min(MAX_SAMPLES, Math.ceil(all.length / SAMPLE));
    const step = n > 1 ? (all.length - SAMPLE) / (n - 1) : 0;
    return Array.from({ length: n }, (_, i) => {
      const start = Math.round(i * step);
      return all.slice(start, start + SAMPLE);
    });
  }
  const out: string[] = [];
  for (const [start, end] of languageWindows(text.length) ?? []) {
    const sample = clean(text.slice(start, end)).slice(0, SAMPLE);
    if (sample.length >= 20) out.push(sample);
  }
  return out;
}
