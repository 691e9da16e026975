import { z } from 'zod';
import type { Clock } from '../clock.js';
import { KildeError } from '../errors.js';
import { type HttpAnswer, HttpFailure, httpRequest, jsonOf } from '../net/http.js';
import { joinUrl } from '../net/join-url.js';

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
  clock?: Clock;
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
  const headers: Record<string, string> = { accept: 'application/json' };
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
  const net = { ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.clock ? { clock: o.clock } : {}) };
  const fail = (message: string, options: { cause?: unknown; detail?: string } = {}) =>
    new KildeError('LLM_FAILED', message, { ...options, expose: true });

  return {
    async complete(messages, options = {}) {
      let answer: HttpAnswer;
      try {
        answer = await httpRequest(
          {
            url: joinUrl(o.baseUrl, 'chat/completions'),
            headers,
            json: { model: o.model, messages, ...options.extra },
            timeoutMs: o.timeoutMs,
            signal: options.signal,
          },
          net,
        );
      } catch (err) {
        if (!(err instanceof HttpFailure)) throw err;
        if (err.kind === 'timeout') {
          throw new KildeError('LLM_TIMEOUT', `LLM endpoint did not answer within ${o.timeoutMs / 1000} s`, {
            cause: err,
            expose: true,
          });
        }
        throw fail('LLM endpoint unreachable', { cause: err });
      }
      if (!answer.ok) {
        throw fail(`LLM endpoint answered HTTP ${answer.status}`, { detail: answer.text.slice(0, 500) });
      }
      const json = jsonOf(answer);
      if (json === undefined)
        throw fail('LLM endpoint answered malformed JSON', { detail: answer.text.slice(0, 500) });
      const parsed = completionSchema.safeParse(json);
      if (!parsed.success) {
        throw fail('LLM answer has no choices[0].message.content', { detail: answer.text.slice(0, 500) });
      }
      return parsed.data.choices[0]!.message.content;
    },

    async probe(signal) {
      const url = joinUrl(o.baseUrl, 'models');
      const answer = await httpRequest({ url, headers, timeoutMs: o.timeoutMs, signal }, net);
      if (!answer.ok) throw new Error(`GET ${url} answered HTTP ${answer.status}`);
    },
  };
}
