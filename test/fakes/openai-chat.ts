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
  | { kind: 'status'; status: number; body?: unknown }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'malformed' }
  | { kind: 'no-content' };

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

export async function startFakeChatServer(): Promise<FakeChatServer> {
  const state: { mode: ChatMode } = { mode: { kind: 'ok' } };
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
    },
  };
}
