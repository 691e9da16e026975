/**
 * The floor of `npm run bench:vs-langchain-search` (variant `floor-dense`): the least any HTTP server
 * answering a dense search from Kilde's LanceDB index must do, in a process of its own, with nothing
 * of Kilde's service around it. A bare `node:http` server: `POST /search` `{query, k}` → the query
 * embedded (`fetch`, base64, as Kilde's embedder asks) → the query Kilde's adapter sends (cosine over
 * `text_dense`, the tenant prefilter, 2k rows for the dedup) read as Arrow → `{documents}` (the first
 * k texts). No auth, validation, logging, dedup or metrics.
 *   node bench/search-floor-server.mjs <lancedb uri> <table> <collection> <embeddings base url> <model>
 * Prints `listening <url>` once ready.
 */
import { createServer } from 'node:http';
import { connect } from '@lancedb/lancedb';

const [uri, tableName, collection, baseURL, model] = process.argv.slice(2);
const table = await (await connect(uri)).openTable(tableName);
const where = `collection_name IN ('${collection}')`;

async function embed(query) {
  const res = await fetch(`${baseURL}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, input: [query], encoding_format: 'base64' }),
  });
  const b = Buffer.from((await res.json()).data[0].embedding, 'base64');
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

const server = createServer(async (req, res) => {
  try {
    const parts = [];
    for await (const c of req) parts.push(c);
    const { query, k } = JSON.parse(Buffer.concat(parts).toString('utf8'));
    const batch = await table
      .vectorSearch(await embed(query))
      .column('text_dense')
      .distanceType('cosine')
      .select(['id', 'content', 'meta', '_distance'])
      .where(where)
      .limit(2 * k)
      .toArrow();
    const documents = (batch.getChild('content')?.toArray() ?? []).slice(0, k);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ documents }));
  } catch (err) {
    res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }));
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
