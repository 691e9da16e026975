/**
 * The LangChain.js side of `npm run bench:vs-langchain-search`: what a TypeScript user would deploy
 * in front of LangChain's LanceDB store, a minimal `node:http` server.
 *   node bench/vs-langchain/search-server.mjs <lancedb uri> <embeddings base url> <model>
 * `POST /search` `{query, k}` → `similaritySearch(query, k)` → `{documents: [pageContent…]}`.
 * Queries are embedded by `OpenAIEmbeddings` against the same OpenAI-compatible endpoint Kilde uses.
 * Prints `listening <url>` once ready.
 */
import { createServer } from 'node:http';
import { connect } from '@lancedb/lancedb';
import { LanceDB } from '@langchain/community/vectorstores/lancedb';
import { OpenAIEmbeddings } from '@langchain/openai';

const [uri, baseURL, model] = process.argv.slice(2);
const table = await (await connect(uri)).openTable('bench');
const store = new LanceDB(new OpenAIEmbeddings({ model, apiKey: 'bench-key', configuration: { baseURL } }), {
  table,
});

const server = createServer(async (req, res) => {
  try {
    if (req.method !== 'POST' || req.url !== '/search') {
      res.writeHead(404).end();
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const { query, k } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (typeof query !== 'string' || !Number.isInteger(k)) {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"query and k"}');
      return;
    }
    const docs = await store.similaritySearch(query, k);
    const body = JSON.stringify({
      documents: docs.map((d) => d.pageContent),
      ids: docs.map((d) => d.metadata.kilde_id),
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }));
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
