import type { ChatClient } from '../llm/chat-client.js';

export const ECHO_MAX_CHARS = 10_000;

export const REWRITE_INSTRUCTION =
  "Rewrite the user's message more concisely. Keep its meaning and language. Answer with the rewritten text only.";

export interface EchoResult {
  original: string;
  rewritten: string;
}

/** The one service function behind both `POST /echo` and the `rewrite_concisely` MCP tool. */
export function createEchoService(llm: ChatClient) {
  return {
    async rewrite(text: string, signal?: AbortSignal): Promise<EchoResult> {
      const rewritten = await llm.complete(
        [
          { role: 'system', content: REWRITE_INSTRUCTION },
          { role: 'user', content: text },
        ],
        signal ? { signal } : {},
      );
      return { original: text, rewritten };
    },
  };
}

export type EchoService = ReturnType<typeof createEchoService>;
