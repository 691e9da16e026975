import { MockLanguageModelV3 } from 'ai/test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { SearchHit } from '../../src/index/contract.js';
import { type AgentLoopOptions, runAgentLoop } from '../../src/retrieve/agent-loop.js';
import type { AgentTask } from '../../src/retrieve/agent-prompt.js';
import { createRetrieveMetrics } from '../../src/retrieve/metrics.js';
import { logSink } from '../helpers/app.js';

/** What a scripted model answers to one call (the ai SDK's language-model result). */
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const usage = (input: number, output: number): GenerateResult['usage'] => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

let ids = 0;
function calls(...inputs: string[]): GenerateResult {
  return {
    content: inputs.map((input) => ({
      type: 'tool-call' as const,
      toolCallId: `c${++ids}`,
      toolName: 'retrieve',
      input,
    })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: usage(100, 10),
    warnings: [],
  };
}
const retrieve = (...queries: string[]) => calls(JSON.stringify({ queries }));
function text(t: string, u = usage(100, 5)): GenerateResult {
  return {
    content: [{ type: 'text', text: t }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: u,
    warnings: [],
  };
}

function hit(content: string, score: number): SearchHit {
  return {
    id: content,
    content,
    score,
    meta: {
      collection_name: 'kb',
      collection_type: 'knowledge',
      file_id: content.slice(0, 8),
      ingest_version: 'v1',
      split_id: 0,
      name: `${content.slice(0, 8)}.md`,
    },
  };
}

const task: AgentTask = {
  messages: [
    { role: 'user', content: 'Which topics: taxes or rye bread?' },
    { role: 'assistant', content: 'Both.' },
    { role: 'user', content: 'Tell me about the second one.' },
  ],
  queries: [],
  collections: ['kb'],
  k: 5,
  today: '2026-01-01',
  maxIterations: 3,
};

function setup(model: MockLanguageModelV3, over: Partial<AgentLoopOptions> = {}) {
  const searched: string[][] = [];
  const metrics = createRetrieveMetrics(new Registry());
  const options: AgentLoopOptions = {
    model,
    strictTools: true,
    maxIterations: 3,
    maxTokens: 20_000,
    previewK: 2,
    previewChars: 20,
    signal: new AbortController().signal,
    retrieve: async (queries) => {
      searched.push(queries);
      return queries.map((q) => [
        hit(`${q}: the first long passage about ${q}, with many more words`, 0.9),
        hit(`${q}: a second passage`, 0.8),
        hit(`${q}: a third passage`, 0.7),
      ]);
    },
    metrics: metrics.agent,
    log: pino({ level: 'silent' }),
    ...over,
  };
  return { searched, options };
}

/** The tool results the model was shown in its n-th call. */
function toolResults(model: MockLanguageModelV3, n: number): string[] {
  return model.doGenerateCalls[n]!.prompt.filter((m) => m.role === 'tool').flatMap((m) =>
    m.content.flatMap((p) => {
      if (p.type !== 'tool-result') return [];
      const out = p.output;
      return out.type === 'text' || out.type === 'error-text' ? [out.value] : [JSON.stringify(out)];
    }),
  );
}

describe('agent loop (scripted ai SDK models)', () => {
  it('accepts on the first call: one search, previews only back to the model', async () => {
    const model = new MockLanguageModelV3({ doGenerate: [retrieve('rye bread'), text('DONE')] });
    const { searched, options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({ stop: 'accepted', toolCalls: 1, llmCalls: 2, tokensIn: 200, tokensOut: 15 });
    expect(searched).toEqual([['rye bread']]);
    const [shown] = toolResults(model, 1);
    const previews = JSON.parse(shown!).results as { n: number; source: string; preview: string }[];
    // AGENT_PREVIEW_K items of AGENT_TOOL_PREVIEW_CHARS characters (plus the ellipsis), never the full text.
    expect(previews).toHaveLength(2);
    expect(previews[0]).toEqual({
      n: 1,
      source: 'rye brea.md',
      score: 0.9,
      preview: 'rye bread: the first…',
    });
    expect(shown).not.toContain('many more words');
    // The conversation reached the model, with the date, the collections and k.
    const first = model.doGenerateCalls[0]!;
    const system = first.prompt.find((m) => m.role === 'system')!.content as string;
    expect(system).toContain('Today is 2026-01-01');
    expect(system).toContain('"kb"');
    expect(system).toContain('at most 3 times');
    expect(JSON.stringify(first.prompt)).toContain('Tell me about the second one.');
    expect(first.tools?.[0]).toMatchObject({ type: 'function', name: 'retrieve', strict: true });
    expect(first.maxOutputTokens).toBeLessThanOrEqual(4096);
  });

  it('retries once when everything is off-topic, then accepts', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [retrieve('quantum chromodynamics'), retrieve('rye bread', 'sourdough'), text('DONE')],
    });
    const { searched, options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({ stop: 'accepted', toolCalls: 2, llmCalls: 3 });
    expect(searched).toEqual([['quantum chromodynamics'], ['rye bread', 'sourdough']]);
    // The second call saw the first call's previews; the third saw both.
    expect(toolResults(model, 1)).toHaveLength(1);
    expect(toolResults(model, 2)).toHaveLength(2);
  });

  it('stops a model that calls the tool forever at AGENT_MAX_ITERATIONS, without another LLM call', async () => {
    let n = 0;
    const model = new MockLanguageModelV3({ doGenerate: async () => retrieve(`query ${++n}`) });
    const { searched, options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({ stop: 'iterations', toolCalls: 3, llmCalls: 3 });
    expect(searched).toHaveLength(3);
    expect(model.doGenerateCalls).toHaveLength(3);
  });

  it('refuses parallel calls past the cap: they run no search', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [
        retrieve('a'),
        calls(...['b', 'c', 'd', 'e'].map((q) => JSON.stringify({ queries: [q] }))),
      ],
    });
    const { searched, options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({ stop: 'iterations', toolCalls: 5, llmCalls: 2 });
    expect(searched).toEqual([['a'], ['b'], ['c']]);
  });

  it('counts invalid arguments as calls: a model sending garbage forever stops at the cap', async () => {
    const model = new MockLanguageModelV3({ doGenerate: async () => calls('{"queries": ["rye') });
    const { searched, options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({ stop: 'iterations', toolCalls: 3, llmCalls: 3 });
    expect(searched).toEqual([]);
    // The SDK told the model what was wrong with its arguments.
    expect(toolResults(model, 1)[0]).toMatch(/Invalid input for tool retrieve/);
  });

  it('takes at most 2 queries per call and treats retrieve([]) as "no retrieval needed"', async () => {
    const many = new MockLanguageModelV3({ doGenerate: [retrieve('a', 'b', 'c'), text('DONE')] });
    const s1 = setup(many);
    await runAgentLoop(task, s1.options);
    expect(s1.searched).toEqual([['a', 'b']]);

    const none = new MockLanguageModelV3({ doGenerate: [retrieve(), text('DONE')] });
    const s2 = setup(none);
    expect((await runAgentLoop(task, s2.options)).stop).toBe('no-retrieval');
    expect(s2.searched).toEqual([]);
  });

  it('hands a text answer (no tool call) to the fallback parser', async () => {
    const model = new MockLanguageModelV3({ doGenerate: [text('[TOOL_CALLS]retrieve{"queries":["x"]}')] });
    const { searched, options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({
      stop: 'answered-in-text',
      toolCalls: 0,
      text: '[TOOL_CALLS]retrieve{"queries":["x"]}',
    });
    expect(searched).toEqual([]);
  });

  it("never starts a call past the token budget, and caps each call's output to what is left", async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => ({ ...retrieve('a'), usage: usage(900, 50) }),
    });
    const { searched, options } = setup(model, { maxTokens: 1200 });
    const r = await runAgentLoop(task, options);
    expect(r).toMatchObject({ stop: 'tokens', llmCalls: 1, tokensIn: 900, tokensOut: 50 });
    expect(searched).toEqual([['a']]);
    const asked = model.doGenerateCalls[0]!.maxOutputTokens!;
    expect(asked).toBeGreaterThan(0);
    expect(asked).toBeLessThan(1200);
  });

  it('estimates tokens at 4 characters each when the endpoint reports no usage', async () => {
    const none = {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
    };
    const model = new MockLanguageModelV3({
      doGenerate: async () => ({ ...text('DONE'), usage: none, request: { body: 'x'.repeat(4000) } }),
    });
    const { options } = setup(model);
    const r = await runAgentLoop(task, options);
    expect(r.tokensIn).toBe(Math.ceil(JSON.stringify('x'.repeat(4000)).length / 4));
    expect(r.tokensOut).toBeGreaterThan(0);
  });

  it('ends with "aborted" when the deadline aborts the call in flight', async () => {
    const deadline = new AbortController();
    const model = new MockLanguageModelV3({
      doGenerate: (call) =>
        new Promise((_, reject) => {
          call.abortSignal?.addEventListener('abort', () => reject(call.abortSignal?.reason));
          deadline.abort(new Error('AGENT_TIMEOUT'));
        }),
    });
    const { options } = setup(model, { signal: deadline.signal });
    expect((await runAgentLoop(task, options)).stop).toBe('aborted');
  });

  it('ends with "model-error" (never throws) when the model call fails, and makes no retry', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new Error('HTTP 500');
      },
    });
    const { options } = setup(model);
    expect(await runAgentLoop(task, options)).toMatchObject({ stop: 'model-error', toolCalls: 0 });
    expect(model.doGenerateCalls).toHaveLength(1);
  });

  it("logs the endpoint's warnings through the logger once per run (never on the console)", async () => {
    const warned: GenerateResult = {
      ...retrieve('a'),
      warnings: [{ type: 'unsupported', feature: 'temperature' }],
    };
    const model = new MockLanguageModelV3({
      doGenerate: [warned, { ...text('DONE'), warnings: warned.warnings }],
    });
    const sink = logSink();
    const { options } = setup(model, { log: pino({ level: 'info' }, sink.stream) });
    await runAgentLoop(task, options);
    const lines = sink.lines.filter((l) => l.msg === 'agent: the model endpoint reported warnings');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ warnings: [{ type: 'unsupported', feature: 'temperature' }] });
  });

  it('sends the tool without `strict` when AGENT_STRICT_TOOLS=false', async () => {
    const model = new MockLanguageModelV3({ doGenerate: [text('DONE')] });
    const { options } = setup(model, { strictTools: false });
    await runAgentLoop(task, options);
    expect(model.doGenerateCalls[0]!.tools?.[0]).not.toHaveProperty('strict');
  });
});
