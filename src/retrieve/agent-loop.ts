import { generateText, type LanguageModel, type ModelMessage, type StepResult, type ToolSet, tool } from 'ai';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { SearchHit } from '../index/contract.js';
import {
  type AgentTask,
  QUERIES_PER_CALL,
  RETRIEVE_TOOL,
  RETRIEVE_TOOL_DESCRIPTION,
  systemPrompt,
  userPrompt,
} from './agent-prompt.js';
import type { AgentMetrics, AgentStop } from './metrics.js';

export interface AgentLoopOptions {
  model: LanguageModel;
  /** `AGENT_STRICT_TOOLS`: the tool goes out with `"strict": true`, else without the field. */
  strictTools: boolean;
  maxIterations: number;
  maxTokens: number;
  previewK: number;
  previewChars: number;
  /** Aborted at the run's deadline (`AGENT_TIMEOUT`): the LLM request in flight is cancelled. */
  signal: AbortSignal;
  /**
   * Searches the queries of one tool call, one list per query, full results kept by the caller
   * (the side channel). Only previews of them go back to the model.
   */
  retrieve(queries: string[]): Promise<SearchHit[][]>;
  metrics: AgentMetrics;
  log: Logger;
  /** Counters kept current while the loop runs, so a caller that stops waiting still has them. */
  progress?: LoopProgress;
}

export interface LoopProgress {
  toolCalls: number;
  llmCalls: number;
}

export interface AgentLoopResult {
  stop: Exclude<AgentStop, 'text' | 'timeout'> | 'answered-in-text' | 'aborted';
  /** Tool calls the model made, invalid and refused ones included. */
  toolCalls: number;
  /** Tool calls that ran a search (successfully). */
  searches: number;
  llmCalls: number;
  tokensIn: number;
  tokensOut: number;
  /** The model's last text, when the run ended on one (the fallback parser reads it). */
  text?: string;
}

/** Largest `max_tokens` one call asks for, below every current model's output limit. */
export const MAX_OUTPUT_TOKENS_PER_CALL = 4096;

/** The usual estimate where an endpoint reports no usage: about 4 characters per token. */
const CHARS_PER_TOKEN = 4;
const estimateTokens = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN);

/** Thrown from `prepareStep` when the next call would not fit the token budget. */
class TokenBudgetExhausted extends Error {
  override readonly name = 'TokenBudgetExhausted';
}

const retrieveInput = z.object({
  // No length bounds in the schema: strict mode accepts few keywords, and the bounds are applied in
  // code anyway (at most QUERIES_PER_CALL queries, each clipped), so a model is never refused for them.
  queries: z
    .array(z.string())
    .describe('1 or 2 short, self-contained search queries; an empty list when no retrieval is needed'),
});

/** Previews only: the full results stay on the side channel and never reach the model. */
export function previews(lists: readonly SearchHit[][], k: number, chars: number) {
  const seen = new Set<string>();
  const out: { n: number; source: string; score: number; preview: string }[] = [];
  // Interleave the queries' lists, so each query shows its best hits first.
  for (let rank = 0; out.length < k && lists.some((l) => rank < l.length); rank++) {
    for (const list of lists) {
      const hit = list[rank];
      if (!hit || seen.has(hit.content) || out.length >= k) continue;
      seen.add(hit.content);
      const text = hit.content.replace(/\s+/g, ' ').trim();
      out.push({
        n: out.length + 1,
        source: hit.meta.name ?? hit.meta.file_id,
        score: Math.round(hit.score * 1000) / 1000,
        preview: [...text].length > chars ? `${[...text].slice(0, chars).join('')}…` : text,
      });
    }
  }
  return out;
}

/**
 * The tool-calling loop on the `ai` SDK. Every budget is enforced here, in code: at most
 * `maxIterations` tool calls (a call past it runs no search, and the loop stops when the cap is
 * reached), no LLM call that would exceed `maxTokens`, and the caller's deadline aborts the request
 * in flight. It never throws: a budget hit, a time-out or a model that misbehaves (endless calls,
 * invalid arguments, an HTTP error, garbage) ends the run with what the side channel holds.
 */
export async function runAgentLoop(task: AgentTask, o: AgentLoopOptions): Promise<AgentLoopResult> {
  let executed = 0;
  let invalid = 0;
  let refused = 0;
  let searchedCalls = 0;
  let emptyCalls = 0;
  let tokensIn = 0;
  let tokensOut = 0;
  let llmCalls = 0;
  let warned = false;
  const maxChars = 2000;
  const progress = o.progress ?? { toolCalls: 0, llmCalls: 0 };

  const tools = {
    [RETRIEVE_TOOL]: tool({
      description: RETRIEVE_TOOL_DESCRIPTION,
      inputSchema: retrieveInput,
      ...(o.strictTools ? { strict: true } : {}),
      execute: async ({ queries }) => {
        executed += 1;
        progress.toolCalls = executed + invalid;
        if (invalid + executed > o.maxIterations) {
          refused += 1;
          o.metrics.toolCall('refused');
          return JSON.stringify({ error: 'The search budget is used up; no search was run. Reply DONE.' });
        }
        const clean = [...new Set(queries.map((q) => q.trim().slice(0, maxChars)).filter(Boolean))].slice(
          0,
          QUERIES_PER_CALL,
        );
        if (clean.length === 0) {
          emptyCalls += 1;
          o.metrics.toolCall('empty');
          o.log.debug({ iteration: invalid + executed }, 'agent: retrieve([]), no retrieval needed');
          return JSON.stringify({ results: [] });
        }
        o.log.debug({ iteration: invalid + executed, queries: clean }, 'agent: retrieve');
        try {
          const lists = await o.retrieve(clean);
          searchedCalls += 1;
          o.metrics.toolCall('ok');
          return JSON.stringify({ results: previews(lists, o.previewK, o.previewChars) });
        } catch (err) {
          o.metrics.toolCall('failed');
          o.log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'agent: retrieve failed');
          return JSON.stringify({ error: 'The search failed. Reply DONE.' });
        }
      },
    }),
  } satisfies ToolSet;

  const calls = (steps: readonly StepResult<typeof tools>[]) =>
    steps.reduce((n, s) => n + s.toolCalls.length, 0);
  const tokensUsed = () => tokensIn + tokensOut;
  const system = systemPrompt(task);
  const toolChars = JSON.stringify(z.toJSONSchema(retrieveInput)).length + RETRIEVE_TOOL_DESCRIPTION.length;

  const finish = (stop: AgentLoopResult['stop'], toolCalls: number, text?: string): AgentLoopResult => ({
    stop,
    toolCalls,
    searches: searchedCalls,
    llmCalls,
    tokensIn,
    tokensOut,
    ...(text === undefined ? {} : { text }),
  });

  try {
    const result = await generateText({
      model: o.model,
      system,
      messages: [{ role: 'user', content: userPrompt(task) }],
      tools,
      toolChoice: 'auto',
      temperature: 0,
      // Budgets are Kilde's: the SDK's own retries (2 by default, with back-off) would spend them.
      maxRetries: 0,
      abortSignal: o.signal,
      stopWhen: [({ steps }) => calls(steps) >= o.maxIterations, () => tokensUsed() >= o.maxTokens],
      prepareStep: ({ messages }: { messages: ModelMessage[] }) => {
        // The prompt of the next call, estimated before it is sent: a call that cannot fit is not made.
        const promptTokens = estimateTokens(system.length + JSON.stringify(messages).length + toolChars);
        const left = o.maxTokens - tokensUsed() - promptTokens;
        if (left <= 0) throw new TokenBudgetExhausted(`next call needs ~${promptTokens} prompt tokens`);
        llmCalls += 1;
        progress.llmCalls = llmCalls;
        o.metrics.llmCall();
        return { maxOutputTokens: Math.min(MAX_OUTPUT_TOKENS_PER_CALL, left) };
      },
      onStepFinish: (step) => {
        const usage = step.usage;
        const stepIn = usage.inputTokens ?? estimateTokens(JSON.stringify(step.request.body ?? '').length);
        const stepOut =
          usage.outputTokens ??
          estimateTokens(step.text.length + JSON.stringify(step.toolCalls.map((c) => c.input)).length);
        if (step.warnings?.length && !warned) {
          warned = true;
          o.log.warn({ warnings: step.warnings }, 'agent: the model endpoint reported warnings');
        }
        tokensIn += stepIn;
        tokensOut += stepOut;
        o.metrics.tokens(stepIn, stepOut);
        const bad = step.toolCalls.filter((c) => c.invalid === true);
        for (const c of bad) {
          o.metrics.toolCall('invalid');
          o.log.debug(
            { tool: c.toolName, reason: c.error instanceof Error ? c.error.message : String(c.error) },
            'agent: invalid tool call',
          );
        }
        invalid += bad.length;
        progress.toolCalls = executed + invalid;
        o.log.debug(
          {
            step: llmCalls,
            finish: step.finishReason,
            toolCalls: step.toolCalls.map((c) => ({ tool: c.toolName, input: c.input })),
            text: step.text.slice(0, 200) || undefined,
            tokensIn: stepIn,
            tokensOut: stepOut,
          },
          'agent: step',
        );
      },
    });
    const total = calls(result.steps);
    const last = result.steps.at(-1);
    const cut = (last?.toolCalls.length ?? 0) > 0;
    if (refused > 0 || (cut && total >= o.maxIterations)) return finish('iterations', total);
    if (cut && tokensUsed() >= o.maxTokens) return finish('tokens', total);
    if (cut) return finish('model-error', total);
    // Only `retrieve([])`: the model said no documents are needed.
    if (searchedCalls === 0 && emptyCalls > 0 && emptyCalls === total) return finish('no-retrieval', total);
    // No search ran (no call, or only invalid or failed ones): the text may still hold the queries.
    if (searchedCalls === 0) return finish('answered-in-text', total, result.text);
    return finish('accepted', total, result.text);
  } catch (err) {
    if (o.signal.aborted) return finish('aborted', executed + invalid);
    if (err instanceof TokenBudgetExhausted) {
      o.log.debug({ reason: err.message, tokensIn, tokensOut }, 'agent: token budget reached');
      return finish('tokens', executed + invalid);
    }
    o.log.warn(
      { reason: err instanceof Error ? err.message : String(err) },
      'agent: the model call failed; answering what was found',
    );
    return finish('model-error', executed + invalid);
  }
}
