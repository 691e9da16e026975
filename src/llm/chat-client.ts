import { z } from 'zod';
import { KildeError } from '../http/errors.js';
import { joinUrl } from './join-url.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatClientOptions {
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}

export interface CompleteOptions {
  signal?: AbortSignal;
  /** Extra body fields, e.g. `response_format` or `temperature`. */
  extra?: Record<string, unknown>;
}

export interface ChatClient {
  complete(messages: ChatMessage[], options?: CompleteOptions): Promise<string>;
  /** Readiness: `GET {base}/models` must answer 2xx. */
  probe(signal: AbortSignal): Promise<void>;
}

/** Only the fields Kilde reads; anything else in the answer is ignored. */
const completionSchema = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string() }) })).min(1),
});

/**
 * A single chat completion over plain HTTP (`POST {base}/chat/completions`).
 * Errors: non-2xx → 502 `LLM_FAILED` naming the upstream status; malformed body → 502 `LLM_FAILED`;
 * no answer within `timeoutMs` → 504 `LLM_TIMEOUT`; connection refused etc. → 502 `LLM_FAILED`.
 */
export function createChatClient(o: ChatClientOptions): ChatClient {
  const doFetch = o.fetch ?? fetch;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;

  return {
    async complete(messages, options = {}) {
      const timeout = AbortSignal.timeout(o.timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let res: Response;
      let text: string;
      try {
        res = await doFetch(joinUrl(o.baseUrl, 'chat/completions'), {
          method: 'POST',
          headers,
          body: JSON.stringify({ model: o.model, messages, ...options.extra }),
          signal,
        });
        text = await res.text();
      } catch (err) {
        if (timeout.aborted) {
          throw new KildeError(
            'LLM_TIMEOUT',
            504,
            `LLM endpoint did not answer within ${o.timeoutMs / 1000} s`,
            { cause: err, expose: true },
          );
        }
        throw new KildeError('LLM_FAILED', 502, 'LLM endpoint unreachable', { cause: err, expose: true });
      }
      if (!res.ok) {
        throw new KildeError('LLM_FAILED', 502, `LLM endpoint answered HTTP ${res.status}`, {
          detail: text.slice(0, 500),
          expose: true,
        });
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (err) {
        throw new KildeError('LLM_FAILED', 502, 'LLM endpoint answered malformed JSON', {
          cause: err,
          expose: true,
        });
      }
      const parsed = completionSchema.safeParse(json);
      if (!parsed.success) {
        throw new KildeError('LLM_FAILED', 502, 'LLM answer has no choices[0].message.content', {
          detail: text.slice(0, 500),
          expose: true,
        });
      }
      return parsed.data.choices[0]!.message.content;
    },

    async probe(signal) {
      const res = await doFetch(joinUrl(o.baseUrl, 'models'), { headers, signal });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`GET ${joinUrl(o.baseUrl, 'models')} answered HTTP ${res.status}`);
    },
  };
}
