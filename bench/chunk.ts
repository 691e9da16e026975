/**
 * Chunking throughput over the Danish textbook (48 Markdown chapters), every mode, with the
 * all-MiniLM-L6-v2 tokenizer and with the built-in approximation, the latter also counted by its
 * defining regular expression (what the counter ran before its scanner: same tokens, the speed
 * difference is the scanner's). Prints figures; asserts nothing.
 * Usage: npm run bench:chunk [-- <tokenizer.json or dir>] [<corpus dir>]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOKEN_RE } from '../src/chunk/approx-counter.js';
import type { TokenCounter } from '../src/chunk/chunker.js';
import { createChunker } from '../src/chunk/create-chunker.js';
import { loadTokenCounter } from '../src/chunk/tokenizer.js';
import { CHUNK_MODES } from '../src/config/chunking.js';
import type { ExtractedDocument } from '../src/extract/extractor.js';
import { benchData, FIXTURE_TOKENIZER } from './lib/data.js';

const tokenizer = process.argv[2] ?? FIXTURE_TOKENIZER;
const corpus = process.argv[3] ?? benchData('da-citizenship', 'corpus');
const docs: ExtractedDocument[] = readdirSync(corpus)
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => ({
    text: readFileSync(join(corpus, f), 'utf8'),
    metadata: { languages: ['da'], mime_type: 'text/markdown' },
  }));
const chars = docs.reduce((n, d) => n + d.text.length, 0);
console.log(`corpus: ${docs.length} documents, ${(chars / 1024).toFixed(0)} KiB`);

/** The approximate counter as its regular expression defines it (pieces of four characters). */
const regexCounter: TokenCounter = {
  source: 'approximate, by its regular expression',
  specialTokens: 2,
  count(text) {
    let n = 0;
    for (const m of text.matchAll(TOKEN_RE)) n += Math.ceil(m[0].length / 4);
    return n;
  },
  offsets(text) {
    const out: Array<[number, number]> = [];
    for (const m of text.matchAll(TOKEN_RE)) {
      const end = m.index + m[0].length;
      for (let s = m.index; s < end; ) {
        let e = Math.min(end, s + 4);
        const code = text.charCodeAt(e);
        if (e < end && code >= 0xdc00 && code <= 0xdfff) e += 1;
        out.push([s, e]);
        s = e;
      }
    }
    return out;
  },
};

for (const source of [tokenizer, undefined, 'regex'] as const) {
  const started = performance.now();
  const counter = source === 'regex' ? regexCounter : await loadTokenCounter(source);
  const loadMs = performance.now() - started;
  console.log(`\ncounter: ${counter.source} (loaded in ${loadMs.toFixed(0)} ms)`);
  for (const mode of CHUNK_MODES) {
    const size = mode === 'sentence' ? 8 : mode === 'passage' ? 3 : 400;
    const overlap = mode === 'sentence' ? 1 : mode === 'passage' ? 0 : 80;
    const chunker = createChunker({ mode, size, overlap, prefixTokens: 3, maxTokens: 512 }, counter);
    chunker.chunk(docs[0]!); // warm-up
    const t0 = performance.now();
    let chunks = 0;
    let longest = 0;
    for (const doc of docs) {
      for (const c of chunker.chunk(doc)) {
        chunks++;
        longest = Math.max(longest, c.content.length);
      }
    }
    const ms = performance.now() - t0;
    console.log(
      `${mode.padEnd(9)} size=${String(size).padStart(3)} overlap=${String(overlap).padStart(2)}: ` +
        `${chunks} chunks in ${ms.toFixed(0)} ms (${((chars / 1024 / 1024) * (1000 / ms)).toFixed(1)} MiB/s, longest ${longest} chars)`,
    );
  }
  await counter.close?.();
}
