import { Buffer } from 'node:buffer';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { describeCause, type ErrorVariant, KildeError } from '../../errors.js';
import { type HttpAnswer, HttpFailure, httpRequest, jsonOf } from '../../net/http.js';
import { joinUrl } from '../../net/join-url.js';

export interface VisionClientOptions {
  /** `VISION_LLM_API_BASE_URL` (an OpenAI-compatible base, keeping its `/v1`). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** `VISION_LLM_MAX_TOKENS`. */
  maxTokens: number;
  timeoutMs: number;
  fetch?: typeof fetch;
  clock?: Clock;
}

/** A page image as the vision call sends it. */
export interface PageImage {
  png: Uint8Array;
}

export interface VisionClient {
  /** One chat completion: the prompt and every page image in one user message; the model's text back. */
  transcribe(prompt: string, pages: readonly PageImage[], signal?: AbortSignal): Promise<string>;
}

/** Only the fields Kilde reads from a chat completion. */
const answerSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z.object({ completion_tokens: z.number().nullish() }).nullish(),
});

/** EXTRACTION_FAILED with a message written for the caller (it names no internal address). */
function visionFailed(
  message: string,
  variant?: ErrorVariant<'EXTRACTION_FAILED'>,
  options: { cause?: unknown; detail?: string } = {},
) {
  return new KildeError('EXTRACTION_FAILED', message, { ...options, variant, expose: true });
}

/**
 * The vision model behind `vision-llm` and `hybrid-diagram`: `POST {base}/chat/completions` with
 * `model`, `max_tokens`, `temperature: 0` and one user message whose content is the prompt as a
 * text part followed by one `image_url` part per page (a `data:image/png;base64,` URL), all pages in
 * the one call. An answer that stopped at the output cap fails instead of being indexed cut short;
 * an unreachable, silent or failing endpoint fails the document (no retries: a call costs minutes
 * of GPU, and the caller's next upload is the retry).
 */
export function createVisionClient(o: VisionClientOptions): VisionClient {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
  const url = joinUrl(o.baseUrl, 'chat/completions');
  const net = { ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.clock ? { clock: o.clock } : {}) };
  const overCap = () =>
    visionFailed(
      `Vision output exceeded VISION_LLM_MAX_TOKENS (${o.maxTokens} tokens): the extraction fails rather than index a truncated text; raise VISION_LLM_MAX_TOKENS or split the document`,
    );

  return {
    async transcribe(prompt, pages, signal) {
      const content = [
        { type: 'text', text: prompt },
        ...pages.map((p) => ({
          type: 'image_url',
          image_url: {
            url: `data:image/png;base64,${Buffer.from(p.png.buffer, p.png.byteOffset, p.png.byteLength).toString('base64')}`,
          },
        })),
      ];
      let answer: HttpAnswer;
      try {
        answer = await httpRequest(
          {
            url,
            headers,
            json: {
              model: o.model,
              max_tokens: o.maxTokens,
              temperature: 0,
              messages: [{ role: 'user', content }],
            },
            timeoutMs: o.timeoutMs,
            signal,
          },
          net,
        );
      } catch (err) {
        if (!(err instanceof HttpFailure)) throw err;
        if (err.kind === 'timeout') {
          throw visionFailed(
            `Vision endpoint did not answer within ${Math.round(o.timeoutMs / 1000)} s`,
            'upstreamTimeout',
            {
              cause: err,
            },
          );
        }
        throw visionFailed(
          `Vision endpoint unreachable (${err.networkCode ?? 'no connection'})`,
          'upstreamFailed',
          {
            cause: err,
            detail: describeCause(err),
          },
        );
      }
      if (!answer.ok) {
        // A 4xx about the request (too many or too large images, context length) is about this
        // document; auth and routing errors (401, 403, 404) and 5xx are the endpoint's.
        const aboutDocument =
          answer.status >= 400 && answer.status < 500 && ![401, 403, 404].includes(answer.status);
        const said = aboutDocument ? upstreamMessage(answer) : '';
        throw visionFailed(
          `Vision endpoint answered HTTP ${answer.status}${said}`,
          aboutDocument ? undefined : 'upstreamFailed',
          {
            detail: answer.text.slice(0, 500),
          },
        );
      }
      const parsed = answerSchema.safeParse(jsonOf(answer));
      if (!parsed.success) {
        throw visionFailed('Vision endpoint sent an answer that is not a chat completion', 'upstreamFailed', {
          detail: answer.text.slice(0, 500),
        });
      }
      const choice = parsed.data.choices[0]!;
      const used = parsed.data.usage?.completion_tokens;
      if (choice.finish_reason === 'length' || (typeof used === 'number' && used > o.maxTokens))
        throw overCap();
      if (choice.finish_reason === 'content_filter') {
        throw visionFailed('Vision endpoint refused the document (content filter)');
      }
      const text = choice.message.content?.trim() ?? '';
      if (text === '') {
        throw visionFailed(
          choice.message.refusal
            ? `Vision model refused: ${choice.message.refusal.slice(0, 200)}`
            : 'Vision model returned no text',
          choice.message.refusal ? undefined : 'upstreamFailed',
        );
      }
      return text;
    },
  };
}

const errorSchema = z.object({ error: z.object({ message: z.string() }) });

/** `: <message>` from an OpenAI-style error body (`{"error": {"message": …}}`), short; else nothing. */
function upstreamMessage(answer: HttpAnswer): string {
  const parsed = errorSchema.safeParse(jsonOf(answer));
  const message = parsed.success ? parsed.data.error.message.trim() : '';
  return message === '' ? '' : `: ${message.split('\n')[0]?.slice(0, 200)}`;
}
