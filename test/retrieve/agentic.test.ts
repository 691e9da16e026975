import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type ChatRequestBody,
  chatBody,
  type FakeChatServer,
  type ScriptedAnswer,
  startFakeChatServer,
} from '../fakes/openai-chat.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import type { RecordedRequest } from '../fakes/recording-server.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';
import { ManualClock } from '../helpers/clock.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { ingestText, ONE_CHUNK } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

/** One chunk each (ONE_CHUNK); `bread` is long enough that a 40-character preview cannot be all of it. */
const DOCS: Record<string, string> = {
  bikes: 'Bicycle lanes in Copenhagen are wide. Cyclists ride on separate bicycle paths all year.',
  flu: 'The Spanish flu pandemic of 1918 killed millions; in Denmark about 15000 people died of influenza.',
  tax: 'Income tax in Denmark is high. The municipal tax and the state tax are paid on income.',
  bread:
    'Danish rye bread (rugbrød) is dark, dense and made with sourdough and whole grains. It keeps for a week and is eaten at lunch with toppings.',
};

/** A follow-up whose last message means nothing without the turns before it. */
const FOLLOW_UP = [
  { role: 'user', content: 'Can you tell me about Danish income taxes and about rugbrød?' },
  { role: 'assistant', content: 'Yes: Danish income tax, and rugbrød, the Danish rye bread.' },
  { role: 'user', content: 'What is the second one made of?' },
];

let embed: FakeEmbeddingsServer;
let llm: FakeChatServer;
let rerank: FakeRerankServer;
let ingest: Harness;
const open: RetrieveHarness[] = [];

beforeAll(async () => {
  [embed, llm, rerank] = await Promise.all([
    startFakeOpenAIEmbeddings({ dim: 128 }),
    startFakeChatServer(),
    startFakeRerankServer(),
  ]);
  ingest = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '128',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ...ONE_CHUNK,
  });
  for (const [id, text] of Object.entries(DOCS)) await ingestText(ingest, id, 'kb', text);
  await ingest.settle(); // the retrieval apps open their own index on the data directory
});

afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
  llm.requests.length = 0;
  rerank.requests.length = 0;
  embed.reset();
});

afterAll(async () => {
  await ingest.close();
  await Promise.all([embed.close(), llm.close(), rerank.close()]);
});

async function agentic(env: Record<string, string> = {}, clock?: ManualClock) {
  const r = await startRetrieve(
    {
      KILDE_DATA_DIR: ingest.dataDir,
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_MODEL: 'hash',
      EMBEDDING_DIM: '128',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      EMBEDDING_MAX_RETRIES: '0',
      ENABLE_AGENTIC_RAG: 'true',
      AGENT_API_BASE_URL: llm.baseUrl,
      AGENT_API_KEY: 'llm-key',
      AGENT_MODEL: 'tool-model',
      ...env,
    },
    clock ? { clock } : {},
  );
  open.push(r);
  return r;
}

/** A scripted model: the n-th chat request gets `answers[n]` (the last one repeats). */
function script(...answers: (ScriptedAnswer | ((req: RecordedRequest) => ScriptedAnswer))[]) {
  llm.mode = {
    kind: 'script',
    answer: (req, n) => {
      const a = answers[Math.min(n, answers.length - 1)]!;
      return typeof a === 'function' ? a(req) : a;
    },
  };
}
const retrieveCall = (...queries: string[]) => ({
  toolCalls: [{ name: 'retrieve', arguments: JSON.stringify({ queries }) }],
});
const DONE = { content: 'DONE' };

const bodies = (): ChatRequestBody[] =>
  llm.requests.filter((r) => r.path === '/v1/chat/completions').map(chatBody);
const fileIds = (json: { metadatas: { file_id: string }[][] }) => json.metadatas[0]!.map((m) => m.file_id);
/** The tool messages of a chat request: what the model was shown of the searches. */
const toolMessages = (b: ChatRequestBody) =>
  b.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? '');

/** A metric's value in the exposition text, or 0 when the series is absent. */
function metric(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('POST /search with ENABLE_AGENTIC_RAG=true', () => {
  it('resolves a follow-up from its history and accepts on the first call', async () => {
    script((req) => {
      // A model that reads the transcript: "the second one" is the rye bread.
      const user = chatBody(req).messages.find((m) => m.role === 'user')?.content ?? '';
      return user.includes('rugbrød') && user.includes('second one')
        ? retrieveCall('rugbrød rye bread made of')
        : retrieveCall('nothing');
    }, DONE);
    const r = await agentic();
    const { status, json, headers } = await r.search({ messages: FOLLOW_UP, collection_names: ['kb'], k: 2 });
    expect(status).toBe(200);
    expect(headers.get('x-kilde-pipeline')).toBe('agentic');
    // Exactly one list, the right chunk first, scores on the dense path's [0, 1] scale, best first.
    expect(json.documents).toHaveLength(1);
    expect(fileIds(json)).toContain('bread');
    const scores: number[] = json.distances[0];
    for (const s of scores) expect(s).toBeGreaterThanOrEqual(0);
    for (const s of scores) expect(s).toBeLessThanOrEqual(1);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);

    const [first, second] = bodies();
    expect(bodies()).toHaveLength(2);
    // The request the LLM endpoint received: the model, no streaming, the tool with a strict schema.
    expect(llm.requests[0]!.path).toBe('/v1/chat/completions');
    expect(llm.requests[0]!.headers.authorization).toBe('Bearer llm-key');
    expect(first!.model).toBe('tool-model');
    expect(first!.stream).toBeUndefined();
    expect(first!.tool_choice).toBe('auto');
    expect(first!.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'retrieve',
          description: expect.stringContaining('Search the knowledge bases'),
          parameters: expect.objectContaining({
            type: 'object',
            required: ['queries'],
            additionalProperties: false,
          }),
          strict: true,
        },
      },
    ]);
    expect(first!.messages[0]!.role).toBe('system');
    expect(first!.messages[0]!.content).toMatch(
      /Today is \d{4}-\d{2}-\d{2}\. Knowledge bases searched: "kb"\. The 2 best/,
    );
    expect(first!.messages[1]!.content).toContain('user: What is the second one made of?');
    // The second call carries the first call's result, as previews.
    expect(second!.messages.at(-2)!.tool_calls).toHaveLength(1);
    expect(toolMessages(second!)).toHaveLength(1);
    const m = await r.metrics();
    expect(metric(m, 'retrieve_agent_runs_total{stop="accepted"}')).toBe(1);
    expect(metric(m, 'retrieve_agent_tool_calls_total{outcome="ok"}')).toBe(1);
    expect(metric(m, 'retrieve_agent_llm_calls_total')).toBe(2);
    expect(metric(m, 'retrieve_agent_tokens_total{direction="in"}')).toBe(20);
    expect(metric(m, 'retrieve_agent_tokens_total{direction="out"}')).toBe(10);
    // Which pipeline answered, on the request's log line; each step at DEBUG with its queries.
    const line = r.logs.lines.find((l) => l.msg === `POST /search 200 ${String(l.ms)} ms`);
    expect(line).toMatchObject({
      pipeline: 'agentic',
      agent: { stop: 'accepted', toolCalls: 1, llmCalls: 2 },
    });
    expect(r.logs.lines).toContainEqual(
      expect.objectContaining({ msg: 'agent: retrieve', queries: ['rugbrød rye bread made of'] }),
    );

    // The linear pipeline searches the last message as it is, and misses the chunk.
    const linear = await agentic({ ENABLE_AGENTIC_RAG: 'false', ENABLE_QUERY_GENERATION: 'false' });
    const plain = await linear.search({ messages: FOLLOW_UP, collection_names: ['kb'], k: 2 });
    expect(plain.headers.get('x-kilde-pipeline')).toBe('linear');
    expect(fileIds(plain.json)).not.toContain('bread');
  });

  it('shows the model previews only; the answer holds the full chunks from the side channel', async () => {
    script(retrieveCall('rye bread sourdough'), DONE);
    const r = await agentic({ AGENT_PREVIEW_K: '1', AGENT_TOOL_PREVIEW_CHARS: '40' });
    const { json } = await r.search({ queries: ['rye bread sourdough'], collection_names: ['kb'], k: 3 });
    const [shown] = toolMessages(bodies()[1]!);
    const previews = JSON.parse(shown!).results as { preview: string; source: string }[];
    expect(previews).toHaveLength(1);
    expect(previews[0]!.preview).toBe(`${DOCS.bread!.slice(0, 40)}…`);
    expect(previews[0]!.source).toBe('bread.txt');
    expect(shown).not.toContain('eaten at lunch');
    // The response text is the stored chunk, never a preview.
    expect(json.documents[0][0]).toBe(DOCS.bread);
    for (const d of json.documents[0] as string[]) expect(d.endsWith('…')).toBe(false);
  });

  it('retries once when everything was off-topic, then accepts', async () => {
    script(retrieveCall('quantum chromodynamics gluon'), retrieveCall('Spanish flu Denmark 1918 died'), DONE);
    const r = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'false' });
    const { status, json } = await r.search({ queries: ['how many died?'], collection_names: ['kb'], k: 2 });
    expect(status).toBe(200);
    expect(fileIds(json)[0]).toBe('flu');
    expect(bodies()).toHaveLength(3);
    expect(toolMessages(bodies()[1]!)).toHaveLength(1);
    expect(toolMessages(bodies()[2]!)).toHaveLength(2);
    const m = await r.metrics();
    expect(metric(m, 'retrieve_agent_tool_calls_total{outcome="ok"}')).toBe(2);
    expect(metric(m, 'retrieve_agent_iterations_sum')).toBe(2);
  });

  it('stops a model that calls the tool forever at AGENT_MAX_ITERATIONS, with partial results', async () => {
    let n = 0;
    script(() => retrieveCall(`Spanish flu ${++n}`));
    const r = await agentic({ AGENT_MAX_ITERATIONS: '3', AGENT_INCLUDE_RAW_QUERY: 'false' });
    const { status, json } = await r.search({ queries: ['flu'], collection_names: ['kb'], k: 2 });
    expect(status).toBe(200);
    expect(fileIds(json)[0]).toBe('flu');
    // Three calls were allowed; the loop stops without asking the model a fourth time.
    expect(bodies()).toHaveLength(3);
    const m = await r.metrics();
    expect(metric(m, 'retrieve_agent_budget_hits_total{kind="iterations"}')).toBe(1);
    expect(metric(m, 'retrieve_agent_runs_total{stop="iterations"}')).toBe(1);
  });

  it('answers partial results in time when the model stalls past AGENT_TIMEOUT', async () => {
    const clock = new ManualClock();
    script(retrieveCall('rye bread sourdough'), { stall: true });
    const r = await agentic({ AGENT_TIMEOUT: '30', AGENT_INCLUDE_RAW_QUERY: 'false' }, clock);
    let settled = false;
    const pending = r
      .search({ queries: ['what is it made of'], collection_names: ['kb'], k: 2 })
      .finally(() => {
        settled = true;
      });
    // The second LLM call is in flight and will never be answered.
    await vi.waitFor(() => expect(bodies()).toHaveLength(2));
    clock.advance(29_999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    clock.advance(1);
    const { status, json } = await pending;
    expect(status).toBe(200);
    // What the first call found is answered.
    expect(fileIds(json)[0]).toBe('bread');
    expect(metric(await r.metrics(), 'retrieve_agent_budget_hits_total{kind="time"}')).toBe(1);
  });

  it('a model that stalls on its first call still gets the raw-query seed in time', async () => {
    const clock = new ManualClock();
    script({ stall: true });
    const r = await agentic({}, clock);
    const pending = r.search({ queries: ['Spanish flu Denmark'], collection_names: ['kb'], k: 2 });
    await vi.waitFor(() => expect(bodies()).toHaveLength(1));
    // The seed was searched while the model stalled: embedded, and its index search finished (not
    // only sent: the deadline below must not overtake a search still running).
    await vi.waitFor(() => expect(embed.inputs()).toContain('query: Spanish flu Denmark'));
    await vi.waitFor(async () =>
      expect(metric(await r.metrics(), 'retrieve_stage_duration_seconds_count{stage="search"}')).toBe(1),
    );
    clock.advance(60_000);
    const { status, json } = await pending;
    expect(status).toBe(200);
    expect(fileIds(json)[0]).toBe('flu');
  });

  it.each([
    ['Mistral name + JSON', '[TOOL_CALLS]retrieve{"queries": ["rye bread sourdough"]}', 'mistral'],
    [
      'Mistral list of calls',
      '[TOOL_CALLS][{"name": "retrieve", "arguments": {"queries": ["rye bread sourdough"]}}]',
      'mistral',
    ],
    ['JSON', '{"queries": ["rye bread sourdough"]}', 'json'],
  ])(
    'reads queries a model wrote as text (%s) and searches them directly, rerank skipped',
    async (_n, text, format) => {
      script({ content: text });
      rerank.mode = { kind: 'ok' };
      const r = await agentic({
        AGENT_INCLUDE_RAW_QUERY: 'false',
        ENABLE_RERANKING: 'true',
        RERANK_API_BASE_URL: rerank.url,
      });
      const { status, json } = await r.search({
        queries: ['what is it made of'],
        collection_names: ['kb'],
        k: 2,
      });
      expect(status).toBe(200);
      expect(fileIds(json)[0]).toBe('bread');
      expect(embed.inputs()).toContain('query: rye bread sourdough');
      expect(rerank.requests).toHaveLength(0);
      expect(bodies()).toHaveLength(1);
      expect(metric(await r.metrics(), `retrieve_agent_fallback_parses_total{result="${format}"}`)).toBe(1);
    },
  );

  it('searches the original query when the text holds no readable call', async () => {
    script({ content: 'I am sorry, I cannot browse the internet.' });
    const r = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'false' });
    const { status, json } = await r.search({
      messages: [{ role: 'user', content: 'Spanish flu deaths in Denmark' }],
      collection_names: ['kb'],
      k: 2,
    });
    expect(status).toBe(200);
    expect(fileIds(json)[0]).toBe('flu');
    expect(metric(await r.metrics(), 'retrieve_agent_fallback_parses_total{result="original-query"}')).toBe(
      1,
    );
  });

  it('tells the model about malformed tool arguments and still answers', async () => {
    script({ toolCalls: [{ name: 'retrieve', arguments: '{"queries": ["rye' }] }, DONE);
    const r = await agentic();
    const { status, json } = await r.search({ queries: ['rye bread'], collection_names: ['kb'], k: 2 });
    expect(status).toBe(200);
    expect(fileIds(json)[0]).toBe('bread');
    const [error] = toolMessages(bodies()[1]!);
    expect(error).toMatch(/Invalid input for tool retrieve/);
    expect(metric(await r.metrics(), 'retrieve_agent_tool_calls_total{outcome="invalid"}')).toBe(1);
  });

  it('a model that only ever sends invalid arguments stops at the cap; the original query is searched', async () => {
    script({ toolCalls: [{ name: 'retrieve', arguments: 'queries: flu' }] });
    const r = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'false', AGENT_MAX_ITERATIONS: '2' });
    const { status, json } = await r.search({
      queries: ['Spanish flu Denmark'],
      collection_names: ['kb'],
      k: 1,
    });
    expect(status).toBe(200);
    expect(fileIds(json)).toEqual(['flu']);
    expect(bodies()).toHaveLength(2);
    const m = await r.metrics();
    expect(metric(m, 'retrieve_agent_tool_calls_total{outcome="invalid"}')).toBe(2);
    expect(metric(m, 'retrieve_agent_fallback_parses_total{result="original-query"}')).toBe(1);
  });

  it.each([
    ['a malformed JSON body', { raw: '{"choices": [' }],
    ['an HTTP 500', { status: 500 }],
    ['an answer without choices', { raw: '{"id": "x", "object": "chat.completion", "choices": []}' }],
  ] as const)('answers 200 with what it found when the LLM endpoint sends %s', async (_n, answer) => {
    script(answer);
    const seeded = await agentic();
    const a = await seeded.search({ queries: ['Spanish flu Denmark'], collection_names: ['kb'], k: 2 });
    expect(a.status).toBe(200);
    expect(fileIds(a.json)[0]).toBe('flu');
    // One call, no retries of the SDK's own: the budgets are Kilde's.
    expect(bodies()).toHaveLength(1);
    expect(metric(await seeded.metrics(), 'retrieve_agent_runs_total{stop="model-error"}')).toBe(1);
    // Without the seed, the original query is searched directly.
    const unseeded = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'false' });
    const b = await unseeded.search({ queries: ['Spanish flu Denmark'], collection_names: ['kb'], k: 2 });
    expect(b.status).toBe(200);
    expect(fileIds(b.json)[0]).toBe('flu');
  });

  it('sends "strict": true with AGENT_STRICT_TOOLS=true (default) and no strict field when false', async () => {
    script(DONE);
    const strict = await agentic();
    await strict.search({ queries: ['tax'], collection_names: ['kb'] });
    expect(bodies()[0]!.tools![0]!.function.strict).toBe(true);
    llm.requests.length = 0;
    script(DONE);
    const loose = await agentic({ AGENT_STRICT_TOOLS: 'false' });
    await loose.search({ queries: ['tax'], collection_names: ['kb'] });
    expect(bodies()[0]!.tools![0]!.function).not.toHaveProperty('strict');
  });

  it('merges the raw-query seed into the results (AGENT_INCLUDE_RAW_QUERY)', async () => {
    script(retrieveCall('income tax municipal state'), DONE);
    const r = await agentic();
    const { json } = await r.search({ queries: ['rye bread sourdough'], collection_names: ['kb'], k: 4 });
    // The agent searched taxes; the seed searched the original query: both are in the one list.
    expect(fileIds(json)).toContain('tax');
    expect(fileIds(json)).toContain('bread');
    expect(embed.inputs()).toContain('query: rye bread sourdough');

    embed.reset();
    script(retrieveCall('income tax municipal state'), DONE);
    const off = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'false' });
    const res = await off.search({ queries: ['rye bread sourdough'], collection_names: ['kb'], k: 1 });
    expect(fileIds(res.json)).toEqual(['tax']);
    expect(embed.inputs()).not.toContain('query: rye bread sourdough');
  });

  it('retrieve([]) means no retrieval is needed: only the seed answers', async () => {
    script(retrieveCall(), DONE);
    const r = await agentic();
    const { json } = await r.search({ queries: ['Spanish flu'], collection_names: ['kb'], k: 1 });
    expect(fileIds(json)).toEqual(['flu']);
    expect(embed.inputs()).toEqual(['query: Spanish flu']);
    expect(metric(await r.metrics(), 'retrieve_agent_runs_total{stop="no-retrieval"}')).toBe(1);
  });

  it('stops before a call that would exceed AGENT_MAX_TOKENS, and asks for no more output than is left', async () => {
    script({ ...retrieveCall('Spanish flu'), usage: { prompt_tokens: 900, completion_tokens: 40 } }, DONE);
    const r = await agentic({ AGENT_MAX_TOKENS: '1000', AGENT_INCLUDE_RAW_QUERY: 'false' });
    const { status, json } = await r.search({ queries: ['flu'], collection_names: ['kb'], k: 1 });
    expect(status).toBe(200);
    expect(fileIds(json)).toEqual(['flu']);
    expect(bodies()).toHaveLength(1);
    expect(bodies()[0]!.max_tokens).toBeLessThan(1000);
    const m = await r.metrics();
    expect(metric(m, 'retrieve_agent_budget_hits_total{kind="tokens"}')).toBe(1);
    expect(metric(m, 'retrieve_agent_tokens_total{direction="in"}')).toBe(900);
  });

  it('a failing search inside the fallback yields an empty list, not a 5xx', async () => {
    script({ content: '{"queries": ["rye bread"]}' });
    const r = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'false', SMALL_COLLECTION_CHUNKS: '0' });
    embed.always = { kind: 'status', status: 500 };
    const { status, json } = await r.search({ queries: ['rye bread'], collection_names: ['kb'], k: 2 });
    embed.always = undefined;
    expect(status).toBe(200);
    expect(json).toEqual({ documents: [[]], metadatas: [[]], distances: [[]] });
    expect(r.logs.text()).toContain('agent: fallback search failed');
  });

  it('a failing seed fails the request as the linear pipeline would (the index or embedder is down)', async () => {
    script(DONE);
    const r = await agentic();
    embed.always = { kind: 'status', status: 500 };
    const { status, json } = await r.search({ queries: ['rye bread'], collection_names: ['kb'] });
    embed.always = undefined;
    expect(status).toBe(502);
    expect(json).toMatchObject({ code: 'EMBEDDING_FAILED' });
  });

  it('the linear pipeline answers without ENABLE_AGENTIC_RAG, and says so', async () => {
    const r = await agentic({ ENABLE_AGENTIC_RAG: 'false' });
    const { headers } = await r.search({ queries: ['tax'], collection_names: ['kb'] });
    expect(headers.get('x-kilde-pipeline')).toBe('linear');
    expect(bodies()).toHaveLength(0);
  });
});

describe('Kilde extensions on the agentic pipeline', () => {
  it('applies the filter to every search of the run and explains hits with the agentic path', async () => {
    script(retrieveCall('rye bread', 'income tax'), DONE);
    const r = await agentic({ AGENT_INCLUDE_RAW_QUERY: 'true' });
    const { status, json } = await r.search({
      queries: ['Danish food and taxes'],
      collection_names: ['kb'],
      k: 4,
      explain: true,
      filter: { file_ids: ['bread', 'bikes'] },
    });
    expect(status).toBe(200);
    // The seed and both of the agent's queries searched under the filter: tax never comes back.
    expect(new Set(fileIds(json))).toEqual(new Set(['bread', 'bikes']));
    expect(json.explanations[0].map((e: { path: string }) => e.path)).toEqual(
      json.documents[0].map(() => 'agentic'),
    );
    expect(json.explanations[0].map((e: { score: number }) => e.score)).toEqual(json.distances[0]);
    expect(json.timings_ms.agent).toBeGreaterThanOrEqual(0);
  });

  it('runs the linear pipeline for pipeline.agentic=false', async () => {
    script(retrieveCall('rye bread'), DONE);
    const r = await agentic();
    const res = await r.search({
      queries: ['rye bread'],
      collection_names: ['kb'],
      pipeline: { agentic: false },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-kilde-pipeline')).toBe('linear');
    expect(bodies()).toHaveLength(0);
  });
});
