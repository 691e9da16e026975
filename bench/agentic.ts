import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { Registry } from 'prom-client';
import { systemClock } from '../src/clock.js';
import { LexicalAnalyzer } from '../src/embed/bm25/analysis.js';
import type { DenseEmbedder } from '../src/embed/dense.js';
import { type IndexPoint, pointId } from '../src/index/contract.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import type { VectorIndex } from '../src/index/store.js';
import { createAgentModel } from '../src/llm/agent-model.js';
import { createChatClient } from '../src/llm/chat-client.js';
import type { AgenticSettings } from '../src/retrieve/agentic.js';
import { createCollectionState } from '../src/retrieve/collection-state.js';
import { createCorpusCache } from '../src/retrieve/corpus-cache.js';
import { createRetrieveMetrics } from '../src/retrieve/metrics.js';
import { createQueryLexical } from '../src/retrieve/query-lexical.js';
import { createSearchService, type SearchService } from '../src/retrieve/search-service.js';
import { hashEmbedding } from '../test/fakes/hash-embedding.js';
import { chatBody, type ScriptedAnswer, startFakeChatServer } from '../test/fakes/openai-chat.js';
import type { RecordedRequest } from '../test/fakes/recording-server.js';
import { mulberry32, percentile } from './lib/stats.js';

/**
 * `npm run bench:agentic`: latency and LLM calls per query of the agentic loop against the linear
 * pipeline, on the same index, with a fake OpenAI-compatible LLM that answers after a fixed latency.
 * Every query is a follow-up ("what about the second one?") whose topic is only in the earlier
 * turns; hit@k says whether the chunk of that topic came back. The fake "model" resolves the
 * reference by reading the transcript, as a real one would; it calls `retrieve` once and accepts,
 * or (with --retry-share) first searches something off-topic and retries once.
 *   --docs 2000 --queries 40 --k 5 --llm-ms 200 --retry-share 0.25
 * Prints figures only; nothing here asserts a time.
 */
const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '2000' },
    queries: { type: 'string', default: '40' },
    k: { type: 'string', default: '5' },
    'llm-ms': { type: 'string', default: '200' },
    'retry-share': { type: 'string', default: '0.25' },
  },
});
const DOCS = Number(args.docs);
const QUERIES = Number(args.queries);
const K = Number(args.k);
const LLM_MS = Number(args['llm-ms']);
const RETRY_SHARE = Number(args['retry-share']);
const DIM = 128;
const COLLECTION = 'bench';
const TENANT = 'kb';

const rand = mulberry32(11);
const CONSONANTS = 'bdfgklmnprstvz';
const VOWELS = 'aeiou';
const word = (n: number) => {
  let w = '';
  for (let x = n + 3, len = 0; len < 3 || x > 0; len++, x = Math.floor(x / 70))
    w += CONSONANTS[x % CONSONANTS.length]! + VOWELS[Math.floor(x / CONSONANTS.length) % VOWELS.length]!;
  return w;
};
/** Filler every chunk shares (the chat's small talk matches it, as generic words do in real text). */
const FILLER = ['what', 'about', 'the', 'one', 'and', 'tell', 'me', 'is', 'it', 'of', 'more', 'second'];
/** Topic i is named by three words of its own. */
const topic = (i: number) => [word(3 * i), word(3 * i + 1), word(3 * i + 2)].join(' ');

function chunk(i: number): IndexPoint {
  const filler = Array.from({ length: 30 }, () => FILLER[Math.floor(rand() * FILLER.length)]!);
  const content = `${topic(i)} ${filler.join(' ')} ${topic(i)}`;
  const fileId = `doc-${i}`;
  return {
    id: pointId(fileId, 'v1', 0),
    content,
    meta: {
      collection_name: TENANT,
      collection_type: 'knowledge',
      file_id: fileId,
      ingest_version: 'v1',
      split_id: 0,
      name: `${fileId}.md`,
    },
    dense: hashEmbedding(content, DIM),
  };
}

class InProcessHashEmbedder implements DenseEmbedder {
  readonly provider = 'bench-hash';
  readonly model = 'hash';
  readonly dim = DIM;
  async embedDocuments(texts: readonly string[]) {
    return texts.map((t) => hashEmbedding(t, DIM));
  }
  async embedQuery(text: string) {
    return hashEmbedding(text, DIM);
  }
}

interface Conversation {
  messages: { role: string; content: string }[];
  /** The file the follow-up is about. */
  target: string;
  /** The topic the model resolves "the second one" to. */
  resolved: string;
}

function conversation(n: number): Conversation {
  const a = Math.floor(rand() * DOCS);
  let b = Math.floor(rand() * DOCS);
  if (b === a) b = (b + 1) % DOCS;
  return {
    messages: [
      { role: 'user', content: `Tell me about ${topic(a)} and ${topic(b)}.` },
      { role: 'assistant', content: `Sure: ${topic(a)}, and ${topic(b)}.` },
      {
        role: 'user',
        content: n % 2 ? 'And what about the second one?' : 'Tell me more about the second one.',
      },
    ],
    target: `doc-${b}`,
    resolved: topic(b),
  };
}

/**
 * The scripted model: reads the transcript as the LLM would and resolves "the second one". Query
 * generation (no tools) answers `{"queries": [...]}`; the agent calls `retrieve` and accepts, or
 * searches off-topic first for a share of conversations.
 */
function model(req: RecordedRequest): ScriptedAnswer {
  const body = chatBody(req);
  const user = body.messages.find((m) => m.role === 'user')?.content ?? '';
  const named = /Tell me about (.+?) and (.+?)\./.exec(user);
  const second = named?.[2] ?? 'unknown';
  if (!body.tools) return { content: JSON.stringify({ queries: [second] }) };
  const calls = body.messages.filter((m) => m.role === 'tool').length;
  const retries = hashShare(user) < RETRY_SHARE;
  if (calls === 0) return retrieve(retries ? 'weather forecast tomorrow' : second);
  if (calls === 1 && retries) return retrieve(second);
  return { content: 'DONE' };
}
const retrieve = (q: string): ScriptedAnswer => ({
  toolCalls: [{ name: 'retrieve', arguments: JSON.stringify({ queries: [q] }) }],
});
/** A stable pseudo-random share in [0, 1) per conversation. */
function hashShare(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h / 2 ** 32;
}

type Pipeline = 'linear' | 'linear+query-gen' | 'agentic';

async function serviceFor(pipeline: Pipeline, index: VectorIndex, llmUrl: string): Promise<SearchService> {
  const log = pino({ level: 'silent' });
  const analyzer = new LexicalAnalyzer('english');
  const collection = createCollectionState({ index, refreshMs: 10_000, partialRefreshMs: 1000 });
  const agentic: AgenticSettings | undefined =
    pipeline === 'agentic'
      ? {
          model: createAgentModel({ baseUrl: llmUrl, apiKey: '', model: 'bench-model' }),
          strictTools: true,
          maxIterations: 3,
          maxTokens: 20_000,
          timeoutMs: 60_000,
          includeRawQuery: true,
          historyMessages: 4,
          previewK: 5,
          previewChars: 200,
          clock: systemClock,
        }
      : undefined;
  return createSearchService({
    pipeline: {
      index,
      dense: new InProcessHashEmbedder(),
      lexical: createQueryLexical({ index, analyzer, collection, refreshMs: 10_000 }),
      hybrid: false,
      multiplier: 3,
      corpus: createCorpusCache({ index, analyzer, maxDocs: 20_000, ttlMs: 60_000 }),
      metrics: createRetrieveMetrics(new Registry()),
      log,
    },
    collection,
    llm:
      pipeline === 'linear+query-gen'
        ? createChatClient({ baseUrl: llmUrl, apiKey: '', model: 'bench-model', timeoutMs: 60_000 })
        : undefined,
    generateQueries: pipeline === 'linear+query-gen',
    lastMessages: 6,
    maxQueries: 3,
    mergeResults: true,
    agentic,
    log,
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-agentic-'));
  const llm = await startFakeChatServer();
  llm.mode = { kind: 'script', answer: model, latencyMs: LLM_MS };
  console.log(
    `agentic bench: ${DOCS} chunks, ${QUERIES} follow-up conversations, k=${K}, LLM latency ${LLM_MS} ms, ${Math.round(RETRY_SHARE * 100)}% of agent runs retry once`,
  );
  try {
    const log = pino({ level: 'silent' });
    const index = await createLanceIndex(
      { uri: dir, collection: COLLECTION, denseDim: DIM, sparse: true, timeoutMs: 600_000 },
      { log },
    );
    await index.ensureCollection();
    for (let start = 0; start < DOCS; start += 1000) {
      await index.upsert(Array.from({ length: Math.min(1000, DOCS - start) }, (_, i) => chunk(start + i)));
    }
    const conversations = Array.from({ length: QUERIES }, (_, i) => conversation(i));

    const rows: string[][] = [];
    for (const pipeline of ['linear', 'linear+query-gen', 'agentic'] as const) {
      const service = await serviceFor(pipeline, index, llm.baseUrl);
      const ask = (c: Conversation) =>
        service.search({ messages: c.messages, collection_names: [TENANT], k: K });
      await ask(conversations[0]!); // warm-up: lazy index loads
      const before = llm.requests.length;
      const latencies: number[] = [];
      let hits = 0;
      for (const c of conversations) {
        const t0 = performance.now();
        const answer = await ask(c);
        latencies.push(performance.now() - t0);
        if (answer.metadatas[0]?.some((m) => m.file_id === c.target)) hits += 1;
      }
      latencies.sort((a, b) => a - b);
      rows.push([
        pipeline,
        percentile(latencies, 50).toFixed(0),
        percentile(latencies, 95).toFixed(0),
        ((llm.requests.length - before) / QUERIES).toFixed(2),
        `${((hits / QUERIES) * 100).toFixed(0)}%`,
      ]);
    }
    await index.close();
    const header = ['pipeline', 'p50 ms', 'p95 ms', 'LLM calls/query', `hit@${K}`];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((c, i) => c.padStart(widths[i]!)).join('  ');
    console.log(line(header));
    for (const r of rows) console.log(line(r));
  } finally {
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
