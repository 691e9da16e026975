/**
 * The LangChain.js side of `npm run bench:vs-langchain`, one set per process:
 *   node bench/vs-langchain/runner.mjs <files.json> <work dir> <chunk chars> <overlap chars>
 * Loads every file with LangChain's loaders (TextLoader, PDFLoader, DocxLoader), splits it with
 * RecursiveCharacterTextSplitter (MarkdownTextSplitter for .md) at the given budget, embeds with a
 * zero-cost embedder (one fixed unit vector per text, as on Kilde's side) and writes everything with
 * @langchain/community's LanceDB store in one `fromDocuments` (its fastest path). Prints one JSON line.
 *
 * LC_FLOOR=1: the floors of any pipeline that reads these files and writes their chunks to LanceDB.
 * The files are loaded and split as above (`loadSeconds`: LangChain's loaders and splitters alone);
 * then only LanceDB works, with no LangChain code in between: one `createTable` of the chunks (text,
 * the zero-cost vector, source; fewer columns than either side writes, `seconds`), then a full-text
 * index over the text (`ftsSeconds`), each timed on its own.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TextLoader } from '@langchain/classic/document_loaders/fs/text';
import { DocxLoader } from '@langchain/community/document_loaders/fs/docx';
import { PDFLoader } from '@langchain/community/document_loaders/fs/pdf';
import { LanceDB } from '@langchain/community/vectorstores/lancedb';
import { Embeddings } from '@langchain/core/embeddings';
import { MarkdownTextSplitter, RecursiveCharacterTextSplitter } from '@langchain/textsplitters';

const [listPath, work, chunkChars, overlapChars] = process.argv.slice(2);
const files = JSON.parse(readFileSync(listPath, 'utf8'));
const DIM = 384;

class ZeroCostEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(texts) {
    const v = new Array(DIM).fill(0);
    v[0] = 1;
    return texts.map(() => v);
  }
  async embedQuery() {
    const v = new Array(DIM).fill(0);
    v[0] = 1;
    return v;
  }
}

const size = { chunkSize: Number(chunkChars), chunkOverlap: Number(overlapChars) };
const recursive = new RecursiveCharacterTextSplitter(size);
const markdown = new MarkdownTextSplitter(size);

function loaderFor(path) {
  if (path.endsWith('.pdf')) return new PDFLoader(path);
  if (path.endsWith('.docx')) return new DocxLoader(path);
  return new TextLoader(path);
}

let peak = process.memoryUsage.rss();
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage.rss());
}, 5);
const t0 = performance.now();
const table = { uri: join(work, 'lancedb'), tableName: 'bench', mode: 'overwrite' };
// LC_PER_FILE=1: each file is added to the LanceDB table as soon as it is loaded and split (as
// uploads arriving one at a time would be), instead of one `fromDocuments` over everything.
const perFile = process.env.LC_PER_FILE === '1';
const floor = process.env.LC_FLOOR === '1';
let store;
const write = async (docs) => {
  if (store) await store.addDocuments(docs);
  else store = await LanceDB.fromDocuments(docs, new ZeroCostEmbeddings(), table);
};
const chunks = [];
let total = 0;
for (const path of files) {
  const docs = await loaderFor(path).load();
  const split = await (path.endsWith('.md') ? markdown : recursive).splitDocuments(docs);
  // Only the source as metadata: the loaders' nested objects differ per format and one table holds all.
  const mine = split.map((d) => ({ pageContent: d.pageContent, metadata: { source: path } }));
  total += mine.length;
  // Per file nothing is held past its own write.
  if (perFile) await write(mine);
  else chunks.push(...mine);
}
if (floor) {
  const loadSeconds = (performance.now() - t0) / 1000;
  const lancedb = await import('@lancedb/lancedb');
  const vector = new Array(DIM).fill(0);
  vector[0] = 1;
  const rows = chunks.map((c) => ({ text: c.pageContent, vector, source: c.metadata.source }));
  const start = performance.now();
  const db = await lancedb.connect(table.uri);
  const written = await db.createTable(table.tableName, rows);
  const seconds = (performance.now() - start) / 1000;
  const ftsStart = performance.now();
  await written.createIndex('text', { config: lancedb.Index.fts() });
  const ftsSeconds = (performance.now() - ftsStart) / 1000;
  process.stdout.write(
    `${JSON.stringify({ files: files.length, chunks: total, seconds, ftsSeconds, loadSeconds, peakRss: peak })}\n`,
  );
  process.exit(0);
}
if (!perFile) await write(chunks);
// LC_FTS=1: also a full-text index over the chunk text, so the table is searchable by keyword as
// Kilde's is (its side always builds one): the feature-matched variant.
if (process.env.LC_FTS === '1') {
  const { Index } = await import('@lancedb/lancedb');
  await store.table.createIndex('text', { config: Index.fts() });
}
const seconds = (performance.now() - t0) / 1000;
clearInterval(sampler);
const usage = process.resourceUsage();
peak = Math.max(peak, usage.maxRSS * 1024);
// CPU seconds of the whole process from its start (LanceDB's threads included), as Kilde's side reports.
const cpu = (usage.userCPUTime + usage.systemCPUTime) / 1e6;
process.stdout.write(
  `${JSON.stringify({ files: files.length, chunks: total, seconds, peakRss: peak, cpu })}\n`,
);
