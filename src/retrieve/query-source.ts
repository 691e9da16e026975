import type { Logger } from 'pino';
import { z } from 'zod';
import type { ChatClient } from '../llm/chat-client.js';

export interface ChatTurn {
  role: string;
  content: string;
}

export type QuerySource = 'explicit' | 'generated' | 'last-user' | 'fallback';

export interface ResolvedQueries {
  queries: string[];
  source: QuerySource;
}

export interface QuerySourceOptions {
  llm?: ChatClient | undefined;
  generate: boolean;
  /** How many trailing messages the generator sees. */
  lastMessages: number;
  maxQueries: number;
  log: Logger;
  onFallback?: (reason: string) => void;
}

export const QUERY_GENERATION_PROMPT = `You write search queries for a document retrieval system.
Read the conversation and write 1 to {max} short, self-contained search queries that would find the
passages needed to answer the user's latest message. Resolve pronouns and references from earlier
turns. Keep the user's language. Answer with JSON only, exactly: {"queries": ["..."]}`;

const generatedShape = z.object({ queries: z.array(z.string().trim().min(1).max(2000)).min(1) });

function lastUserMessage(messages: readonly ChatTurn[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user' && m.content.trim()) return m.content.trim().slice(0, 2000);
  }
  return undefined;
}

/** Strict JSON, tolerating a fenced code block around it (some models add one). */
function parseGenerated(text: string, max: number): string[] {
  const unfenced = text.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/i, '$1');
  const parsed = generatedShape.parse(JSON.parse(unfenced));
  return [...new Set(parsed.queries)].slice(0, max);
}

/**
 * Which queries to run, the first step of the linear pipeline: generated from `messages` when query generation is on
 * and messages are given; otherwise the explicit `queries`, else the last user message. Any LLM
 * failure falls back to the last user message (or the explicit queries), never an error.
 */
export async function resolveQueries(
  input: { queries?: readonly string[] | undefined; messages?: readonly ChatTurn[] | undefined },
  o: QuerySourceOptions,
): Promise<ResolvedQueries> {
  const explicit = (input.queries ?? []).map((q) => q.trim()).filter((q) => q.length > 0);
  const messages = (input.messages ?? []).filter((m) => m.content.trim().length > 0);
  if (messages.length > 0 && o.generate && o.llm) {
    const recent = messages.slice(-o.lastMessages);
    try {
      const answer = await o.llm.complete(
        [
          { role: 'system', content: QUERY_GENERATION_PROMPT.replace('{max}', String(o.maxQueries)) },
          {
            role: 'user',
            content: recent.map((m) => `${m.role}: ${m.content}`).join('\n\n'),
          },
        ],
        { extra: { temperature: 0, response_format: { type: 'json_object' } } },
      );
      return { queries: parseGenerated(answer, o.maxQueries), source: 'generated' };
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      o.log.warn({ reason }, 'query generation failed; falling back');
      o.onFallback?.(reason);
      const fallback = lastUserMessage(messages);
      if (fallback) return { queries: [fallback], source: 'fallback' };
      return { queries: explicit, source: 'fallback' };
    }
  }
  if (explicit.length > 0) return { queries: explicit, source: 'explicit' };
  const last = lastUserMessage(messages);
  return { queries: last ? [last] : [], source: 'last-user' };
}
