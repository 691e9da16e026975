import type { ChatTurn } from './query-source.js';

/** What the agent is asked to find: the conversation (or the explicit queries), where, and how much. */
export interface AgentTask {
  /** The last `AGENT_CONVERSATION_HISTORY_MESSAGES` messages, oldest first. */
  messages: readonly ChatTurn[];
  /** The request's explicit queries: the task when there is no conversation. */
  queries: readonly string[];
  collections: readonly string[];
  k: number;
  /** Today's date (`YYYY-MM-DD`), so "this year" or "last week" can be resolved. */
  today: string;
  maxIterations: number;
}

/** The name of the agent's one tool; the fallback parser looks for it in text answers too. */
export const RETRIEVE_TOOL = 'retrieve';

/** Most queries one tool call runs (the contract: 1 to 2 per iteration); extra ones are dropped. */
export const QUERIES_PER_CALL = 2;

export const RETRIEVE_TOOL_DESCRIPTION = `Search the knowledge bases for passages. Give 1 or 2 short, self-contained search queries. \
Returns previews of the best passages (source, score, the first characters). An empty list means no retrieval is needed.`;

/**
 * The agent's instructions. The budgets are stated so a well-behaved model plans for them, but they
 * are enforced in code (agent-loop.ts): a model that ignores this text is cut off all the same.
 */
export function systemPrompt(t: AgentTask): string {
  const collections = t.collections.map((c) => JSON.stringify(c)).join(', ');
  return `You find passages in a document search system for a chat assistant, which answers from them.
Call the tool "${RETRIEVE_TOOL}" once with 1 or 2 short, self-contained search queries that find what the \
latest user message needs. Resolve pronouns and references ("it", "the second one", "that law") from the \
earlier messages, and keep the user's language.
The tool answers previews of the best passages. If any preview is on-topic, accept: reply with the single \
word DONE and do not call the tool again. Only when every preview is off-topic, call "${RETRIEVE_TOOL}" again \
with rewritten queries. You may call it at most ${t.maxIterations} time${t.maxIterations === 1 ? '' : 's'}.
If the latest message needs no documents (a greeting, thanks), call "${RETRIEVE_TOOL}" with an empty list.
Today is ${t.today}. Knowledge bases searched: ${collections}. The ${t.k} best passages will be kept.`;
}

/** The conversation as one transcript: the model's task is to search for it, not to answer it. */
export function userPrompt(t: AgentTask): string {
  if (t.messages.length > 0) {
    const transcript = t.messages.map((m) => `${m.role}: ${m.content}`).join('\n\n');
    return `Conversation (oldest first; find passages for the last user message):\n\n${transcript}`;
  }
  return `Find passages for this search request:\n\n${t.queries.join('\n')}`;
}
