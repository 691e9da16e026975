import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import { tracedFetch } from '../telemetry/http-client.js';
import { tracingActive } from '../telemetry/tracing.js';

export interface AgentModelOptions {
  /** The chat-completions base, `/v1` included: requests go to `{base}/chat/completions`. */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** The SDK's requests go through this `fetch` (tests pass one that reaches a fake). */
  fetch?: typeof fetch;
}

/**
 * The model of the agentic loop: `AGENT_MODEL` at `AGENT_API_BASE_URL` through the `ai` SDK's
 * OpenAI-compatible provider (non-streaming `POST {base}/chat/completions`, tool calls in the OpenAI
 * wire format). The provider appends `/chat/completions` to the base as given, so the base's `/v1` is
 * kept, as the contract requires; an empty key sends no `Authorization` header, like the chat client.
 */
export function createAgentModel(o: AgentModelOptions): LanguageModel {
  // The SDK prints a model's call warnings (an unsupported setting...) on the standard error stream, which would
  // break the JSON log stream; the loop logs them through pino instead (agent-loop.ts).
  globalThis.AI_SDK_LOG_WARNINGS = false;
  const provider = createOpenAICompatible({
    name: 'kilde-agent',
    baseURL: o.baseUrl,
    ...(o.apiKey ? { apiKey: o.apiKey } : {}),
    // With tracing on, each model call is a span and carries its `traceparent` (src/telemetry/).
    ...(tracingActive()
      ? { fetch: tracedFetch(o.fetch ?? globalThis.fetch) }
      : o.fetch
        ? { fetch: o.fetch }
        : {}),
  });
  return provider.chatModel(o.model);
}
