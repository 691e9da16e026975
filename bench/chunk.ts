/**
 * Chunking throughput over the Danish textbook (48 Markdown chapters), every mode, with the
 * all-MiniLM-L6-v2 tokenizer and with the built-in approximation. Prints figures; asserts nothing.
 * Usage: npm run bench:chunk [-- <tokenizer.json or dir>] [<corpus dir>]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

for (const source of [tokenizer, undefined]) {
  const started = performance.now();
  const counter = await loadTokenCounter(source);
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
