import { createRequire } from 'node:module';

type Tinyld = typeof import('tinyld/heavy');
let tinyld: Tinyld | undefined;
/**
 * tinyld's heavy model costs ~0.5 s and ~150 MiB to load: it is loaded (synchronously, from its
 * CommonJS build) the first time a text is classified, not by every `kilde` command that imports this.
 */
function lib(): Tinyld {
  tinyld ??= createRequire(import.meta.url)('tinyld/heavy') as Tinyld;
  return tinyld;
}

/** ISO 639-3 (and 639-2/B) codes that tinyld's table does not map to 639-1. */
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
  const extra = EXTRA_ISO3[c];
  if (extra) return extra;
  const mapped = lib().toISO2(c);
  return /^[a-z]{2}$/.test(mapped) ? mapped : undefined;
}

/** ISO 639-1 → 639-3, the form Kreuzberg reports in `detected_languages`. */
export function toIso6393(code: string): string {
  const mapped = lib().toISO3(code);
  return /^[a-z]{3}$/.test(mapped) ? mapped : code;
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
  return rankSamples(samplesOf(text));
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
  return rankSamples(samples);
}

function rankSamples(samples: readonly string[]): string[] {
  const leads = new Map<string, { count: number; score: number }>();
  for (const sample of samples) {
    const [top] = lib()
      .detectAll(sample)
      .filter((r) => /^[a-z]{2}$/.test(r.lang));
    if (!top) continue;
    const entry = leads.get(top.lang) ?? { count: 0, score: 0 };
    leads.set(top.lang, { count: entry.count + 1, score: entry.score + top.accuracy });
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
