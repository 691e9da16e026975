/**
 * The one embedder of `npm run bench:vs-langchain-search`, in a process of its own: the wire-exact
 * fake OpenAI embeddings server of the tests (`POST /v1/embeddings`, a hashed bag of words,
 * L2-normalised), so Kilde's `http-compat` client and LangChain's `OpenAIEmbeddings` get the same
 * vector for the same text at no model cost. Prints its base URL (`…/v1`) as one line, then serves
 * until killed. Usage: tsx bench/vs-langchain-search-embed.ts <dim>
 */
import { startFakeOpenAIEmbeddings } from '../test/fakes/openai-embeddings.js';

const dim = Number(process.argv[2] ?? '384');
const server = await startFakeOpenAIEmbeddings({ dim });
// The fake records every request for the tests; a bench sends tens of thousands: forget them.
setInterval(() => server.reset(), 2000).unref();
process.stdout.write(`${server.baseUrl}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
