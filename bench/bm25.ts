/**
 * BM25 sparse encoding throughput on real text: SciFact abstracts (English) and the Danish
 * citizenship textbook, documents and queries. Prints figures; asserts nothing.
 * Run: npx tsx bench/bm25.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createSparseEncoder } from '../src/embed/create-sparse.js';
import { benchData } from './lib/data.js';

function englishDocs(): string[] {
  return readFileSync(benchData('scifact', 'corpus.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const row = JSON.parse(line) as { title: string; text: string };
      return `${row.title}\n${row.text}`;
    });
}

function danishDocs(): string[] {
  const dir = `${benchData('da-citizenship', 'corpus')}/`;
  // Paragraphs stand in for chunks.
  return readdirSync(dir).flatMap((f) =>
    readFileSync(dir + f, 'utf8')
      .split(/\n\s*\n/)
      .filter((p) => p.trim().length > 0),
  );
}

function run(language: 'english' | 'danish', docs: string[]): void {
  const encoder = createSparseEncoder('Qdrant/bm25', language);
  encoder.encodeDocuments(docs.slice(0, 200)); // warm-up
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
  const rounds = 3;
  let best = Number.POSITIVE_INFINITY;
  let terms = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    const out = encoder.encodeDocuments(docs);
    best = Math.min(best, performance.now() - t0);
    terms = out.reduce((n, v) => n + v.indices.length, 0);
  }
  const queries = docs.map((d) => d.slice(0, 120));
  const q0 = performance.now();
  for (const q of queries) encoder.encodeQuery(q);
  const queryMs = performance.now() - q0;
  console.log(
    `${language}: ${docs.length} docs, ${(bytes / 1e6).toFixed(2)} MB, ${terms} sparse entries | ` +
      `documents ${(docs.length / (best / 1000)).toFixed(0)} docs/s, ${(bytes / 1e6 / (best / 1000)).toFixed(1)} MB/s | ` +
      `queries ${((queryMs * 1000) / queries.length).toFixed(1)} µs each`,
  );
}

run('english', englishDocs());
run('danish', danishDocs());
