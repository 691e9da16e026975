import type { ServerResponse } from 'node:http';
import { type FakeServer, type RecordedRequest, sendJson, startRecordingServer } from './recording-server.js';

/**
 * A fake OpenAI-compatible chat-completions server (the exact wire shape of
 * `POST /v1/chat/completions` and `GET /v1/models`), with switchable behaviour.
 */
export type ChatMode =
  | {
      kind: 'ok';
      reply?: (req: RecordedRequest) => string;
      /** Default `stop`; `length` is what an answer cut at `max_tokens` says. */
      finishReason?: string;
      /** Reported `usage.completion_tokens` (default 5). */
      completionTokens?: number;
    }
  /** Never answers (the connection stays open until the client gives up or the server closes). */
  | { kind: 'hang' }
  /**
   * A scripted model: `answer` is asked for each chat request (`n` counts from 0 since the mode was
   * set) and answers in the OpenAI wire format, tool calls included.
   */
  | { kind: 'script'; answer: (req: RecordedRequest, n: number) => ScriptedAnswer; latencyMs?: number }
  | { kind: 'status'; status: number; body?: unknown }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'malformed' }
  | { kind: 'no-content' };

/** One answer of a scripted model. */
export type ScriptedAnswer =
  /** Tool calls (`arguments` is the raw string the model wrote, valid JSON or not), optional text. */
  | { toolCalls: { name: string; arguments: string }[]; content?: string; usage?: Usage }
  /** A plain text answer. */
  | { content: string; usage?: Usage }
  /** Never answers: the request stays open until the client gives up (or the server closes). */
  | { stall: true }
  /** An HTTP error in OpenAI's error shape. */
  | { status: number; body?: unknown }
  /** A 200 whose body is these bytes, as they are. */
  | { raw: string };

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface FakeChatServer extends FakeServer {
  /** Base URL including `/v1`, as operators configure it. */
  baseUrl: string;
  mode: ChatMode;
}

export function completion(
  content: string,
  model = 'fake-model',
  finishReason = 'stop',
  completionTokens = 5,
) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finishReason }],
    usage: { prompt_tokens: 10, completion_tokens: completionTokens, total_tokens: 10 + completionTokens },
  };
}

/** A chat completion whose message calls tools, byte for byte as the OpenAI API answers one. */
export function toolCallCompletion(
  calls: readonly { name: string; arguments: string }[],
  o: { model?: string; content?: string; usage?: Usage; firstId?: number } = {},
) {
  const usage = o.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  return {
    id: 'chatcmpl-fake-tools',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: o.model ?? 'fake-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: o.content ?? null,
          tool_calls: calls.map((c, i) => ({
            id: `call_${(o.firstId ?? 0) + i + 1}`,
            type: 'function',
            function: { name: c.name, arguments: c.arguments },
          })),
          refusal: null,
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

/** The `tools`, `tool_choice` and `messages` of a recorded chat request (what the model was sent). */
export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: {
    type: string;
    function: { name: string; description?: string; parameters: Record<string, unknown>; strict?: boolean };
  }[];
  tool_choice?: unknown;
  stream?: boolean;
  max_tokens?: number;
  temperature?: number;
}

export function chatBody(req: RecordedRequest): ChatRequestBody {
  return req.json as ChatRequestBody;
}

export async function startFakeChatServer(): Promise<FakeChatServer> {
  const state: { mode: ChatMode; scripted: number } = { mode: { kind: 'ok' }, scripted: 0 };
  const handle = async (req: RecordedRequest, res: ServerResponse) => {
    if (req.method === 'GET' && req.path === '/v1/models') {
      if (state.mode.kind === 'status')
        return sendJson(res, state.mode.status, { error: { message: 'down' } });
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', owned_by: 'fake' }],
      });
    }
    if (req.method !== 'POST' || req.path !== '/v1/chat/completions') {
      return sendJson(res, 404, { error: { message: `no route ${req.method} ${req.path}` } });
    }
    const mode = state.mode;
    switch (mode.kind) {
      case 'status':
        return sendJson(
          res,
          mode.status,
          mode.body ?? { error: { message: 'upstream error', type: 'server_error' } },
        );
      case 'slow':
        await new Promise((r) => setTimeout(r, mode.delayMs));
        return sendJson(res, 200, completion('late'));
      case 'hang':
        return new Promise<void>((resolve) => res.once('close', () => resolve()));
      case 'malformed':
        res.setHeader('content-type', 'application/json');
        return void res.end('{"choices": [');
      case 'no-content':
        return sendJson(res, 200, { id: 'x', object: 'chat.completion', choices: [] });
      case 'script': {
        const body = chatBody(req);
        // This fake speaks the non-streaming API only, as Kilde uses it.
        if (body.stream === true)
          return sendJson(res, 400, { error: { message: 'streaming not supported here' } });
        const answer = mode.answer(req, state.scripted++);
        // A fixed model latency (benchmarks); tests leave it out.
        if (mode.latencyMs) await new Promise((r) => setTimeout(r, mode.latencyMs));
        if ('stall' in answer) return new Promise<void>((resolve) => res.on('close', () => resolve()));
        if ('raw' in answer) {
          res.setHeader('content-type', 'application/json');
          return void res.end(answer.raw);
        }
        if ('status' in answer) {
          return sendJson(
            res,
            answer.status,
            answer.body ?? {
              error: { message: 'upstream error', type: 'server_error', param: null, code: null },
            },
          );
        }
        const usage = answer.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
        if ('toolCalls' in answer) {
          const firstId = state.scripted * 10;
          return sendJson(
            res,
            200,
            toolCallCompletion(answer.toolCalls, {
              model: body.model,
              usage,
              firstId,
              ...(answer.content === undefined ? {} : { content: answer.content }),
            }),
          );
        }
        const text = completion(answer.content, body.model);
        return sendJson(res, 200, {
          ...text,
          usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
        });
      }
      case 'ok': {
        const body = req.json as { messages?: { role: string; content: string }[]; model?: string };
        const last = body.messages?.at(-1)?.content ?? '';
        const content = mode.reply ? mode.reply(req) : `short: ${last}`;
        return sendJson(res, 200, completion(content, body.model, mode.finishReason, mode.completionTokens));
      }
    }
  };
  const server = await startRecordingServer(handle);
  return {
    ...server,
    baseUrl: `${server.url}/v1`,
    get mode() {
      return state.mode;
    },
    set mode(m: ChatMode) {
      state.mode = m;
      state.scripted = 0;
    },
  };
}
