/**
 * The deterministic "model" behind the fake embedding servers: a hashed bag of words. Each lower-cased
 * word (Unicode letters/digits) adds `1 + ln(tf)` to two signed buckets chosen by FNV-1a hashes, and
 * the vector is L2-normalised. Texts sharing words get a higher cosine, so tests can expect meaningful
 * dense rankings; any test can recompute the exact vector a fake returned.
 *
 * With few dimensions words collide; use `dim` >= 64 where rankings should be meaningful.
 *
 * The text is embedded exactly as received, prefix included (`query: ` / `passage: ` add one shared
 * word to every query / every chunk, which does not change rankings among chunks).
 */
export function hashEmbedding(text: string, dim: number): number[] {
  const v = new Array<number>(dim).fill(0);
  const tf = new Map<string, number>();
  for (const w of words(text)) tf.set(w, (tf.get(w) ?? 0) + 1);
  for (const [word, n] of tf) {
    const weight = 1 + Math.log(n);
    for (const seed of [0x811c9dc5, 0x01000193]) {
      const h = fnv1a(word, seed);
      const bucket = h % dim;
      v[bucket] = (v[bucket] ?? 0) + (h & 0x80000000 ? -weight : weight);
    }
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  // an empty text still gets a unit vector, as a real model would give one
  if (norm === 0) return v.map((_, i) => (i === 0 ? 1 : 0));
  return v.map((x) => x / norm);
}

/** Lower-cased words (letters, marks, digits). */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
}

/** FNV-1a 32-bit over UTF-8, unsigned. */
export function fnv1a(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (const byte of new TextEncoder().encode(s)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  a.forEach((x, i) => {
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  });
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
