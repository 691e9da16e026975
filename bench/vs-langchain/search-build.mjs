/**
 * Builds the LangChain.js side's store for `npm run bench:vs-langchain-search`:
 *   node bench/vs-langchain/search-build.mjs <chunks.jsonl> <vectors.f32> <dim> <lancedb uri>
 * The chunks (one JSON `{id, text}` a line) and their vectors (float32, row after row) are exactly the
 * ones Kilde's ingest wrote; they go in through the store's own `addVectors` (what `fromDocuments`
 * calls after embedding), so the table is the one LangChain's LanceDB store makes. Prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import { LanceDB } from '@langchain/community/vectorstores/lancedb';
import { Document } from '@langchain/core/documents';
import { Embeddings } from '@langchain/core/embeddings';

const [chunksPath, vectorsPath, dimArg, uri] = process.argv.slice(2);
const dim = Number(dimArg);

class Unused extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments() {
    throw new Error('the vectors are given');
  }
  async embedQuery() {
    throw new Error('the vectors are given');
  }
}

const docs = readFileSync(chunksPath, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const { id, text } = JSON.parse(line);
    return new Document({ pageContent: text, metadata: { kilde_id: id } });
  });
const raw = readFileSync(vectorsPath);
const all = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
if (all.length !== docs.length * dim)
  throw new Error(`${all.length / dim} vectors for ${docs.length} chunks`);
const vectors = docs.map((_, i) => Array.from(all.subarray(i * dim, (i + 1) * dim)));
const t0 = performance.now();
const store = new LanceDB(new Unused(), { uri, tableName: 'bench', mode: 'overwrite' });
await store.addVectors(vectors, docs);
process.stdout.write(`${JSON.stringify({ rows: docs.length, seconds: (performance.now() - t0) / 1000 })}\n`);
