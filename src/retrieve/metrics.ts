import { Counter, Histogram, type Registry } from 'prom-client';

export type Stage = 'generate' | 'embed' | 'search' | 'fuse' | 'rerank';

/** Per-stage latency and fallback counters of the retrieval pipeline. */
export function createRetrieveMetrics(registry: Registry) {
  const stage = new Histogram({
    name: 'retrieve_stage_duration_seconds',
    help: 'Retrieval pipeline stage latency',
    labelNames: ['stage'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const fallbacks = new Counter({
    name: 'retrieve_fallbacks_total',
    help: 'Fallbacks taken: query generation to the last user message, rerank to unranked candidates',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const searches = new Counter({
    name: 'search_requests_total',
    help: 'Search requests by mode and outcome',
    labelNames: ['mode', 'outcome'] as const,
    registers: [registry],
  });
  const agent = createAgentMetrics(registry);
  return {
    agent,
    async time<T>(name: Stage, fn: () => Promise<T>): Promise<T> {
      const end = stage.startTimer({ stage: name });
      try {
        return await fn();
      } finally {
        end();
      }
    },
    fallback(kind: 'query_generation' | 'rerank') {
      fallbacks.inc({ kind });
    },
    search(mode: string, outcome: 'ok' | 'error') {
      searches.inc({ mode, outcome });
    },
  };
}

export type RetrieveMetrics = ReturnType<typeof createRetrieveMetrics>;

/** Why an agentic run stopped (`retrieve_agent_runs_total{stop}`). */
export type AgentStop =
  | 'accepted'
  | 'no-retrieval'
  | 'text'
  | 'iterations'
  | 'tokens'
  | 'timeout'
  | 'model-error';

export type BudgetKind = 'iterations' | 'time' | 'tokens';

/** Outcome of one `retrieve` tool call of the agent. */
export type ToolCallOutcome = 'ok' | 'empty' | 'failed' | 'invalid' | 'refused';

/** What the fallback parser made of a text answer: a format it read, or the original query. */
export type FallbackParse = 'json' | 'mistral' | 'original-query';

/** The agentic loop's counters: iterations, tool calls, fallback parses, budget hits, tokens. */
function createAgentMetrics(registry: Registry) {
  const runs = new Counter({
    name: 'retrieve_agent_runs_total',
    help: 'Agentic retrieval runs by why they stopped',
    labelNames: ['stop'] as const,
    registers: [registry],
  });
  const iterations = new Histogram({
    name: 'retrieve_agent_iterations',
    help: 'retrieve tool calls per agentic run',
    buckets: [0, 1, 2, 3, 4, 5, 7, 10, 20],
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: 'retrieve_agent_tool_calls_total',
    help: 'retrieve tool calls of the agent by outcome (refused: past AGENT_MAX_ITERATIONS)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const llmCalls = new Counter({
    name: 'retrieve_agent_llm_calls_total',
    help: 'LLM calls made by the agentic loop',
    registers: [registry],
  });
  const fallbackParses = new Counter({
    name: 'retrieve_agent_fallback_parses_total',
    help: 'Text answers read by the fallback parser, by what it found (json, mistral, original-query)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const budgetHits = new Counter({
    name: 'retrieve_agent_budget_hits_total',
    help: 'Agentic runs stopped by a budget (iterations, time, tokens)',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'retrieve_agent_tokens_total',
    help: 'LLM tokens of the agentic loop (in: prompt, out: completion)',
    labelNames: ['direction'] as const,
    registers: [registry],
  });
  return {
    run(stop: AgentStop, toolCallCount: number) {
      runs.inc({ stop });
      iterations.observe(toolCallCount);
      const budget: Partial<Record<AgentStop, BudgetKind>> = {
        iterations: 'iterations',
        timeout: 'time',
        tokens: 'tokens',
      };
      const kind = budget[stop];
      if (kind) budgetHits.inc({ kind });
    },
    toolCall(outcome: ToolCallOutcome) {
      toolCalls.inc({ outcome });
    },
    llmCall() {
      llmCalls.inc();
    },
    tokens(tokensIn: number, tokensOut: number) {
      tokens.inc({ direction: 'in' }, tokensIn);
      tokens.inc({ direction: 'out' }, tokensOut);
    },
    fallbackParse(result: FallbackParse) {
      fallbackParses.inc({ result });
    },
  };
}

export type AgentMetrics = ReturnType<typeof createAgentMetrics>;
