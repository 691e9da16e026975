import type { ServerResponse } from 'node:http';
import { hashEmbedding } from '../fakes/hash-embedding.js';
import {
  type FakeServer,
  type RecordedRequest,
  sendJson,
  startRecordingServer,
} from '../fakes/recording-server.js';

/**
 * An OpenAI-compatible upstream for a chat platform under test (Open WebUI): `GET /v1/models`,
 * `POST /v1/embeddings` (hash embeddings, test/fakes/hash-embedding.ts) and `POST /v1/chat/completions`
 * streamed (`stream: true`, server-sent events with `delta.tool_calls`, as OpenAI streams them) or not.
 * The model is scripted: `decide` sees each chat request and answers text or tool calls.
 */
export interface ChatMessage {
  role: string;
  content?: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
}

export type Decision = { text: string } | { call: { name: string; arguments: Record<string, unknown> } };

export interface FakeOpenAi extends FakeServer {
  baseUrl: string;
  chatRequests(): ChatRequest[];
}

export const MODEL_ID = 'fake-chat';
export const EMBEDDING_MODEL = 'fake-embed';
export const EMBEDDING_DIM = 64;

export function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? '').join('\n');
  return '';
}

export async function startFakeOpenAi(decide: (req: ChatRequest) => Decision): Promise<FakeOpenAi> {
  const chats: ChatRequest[] = [];
  const handle = async (req: RecordedRequest, res: ServerResponse) => {
    if (req.method === 'GET' && req.path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [
          { id: MODEL_ID, object: 'model', created: 1_700_000_000, owned_by: 'fake' },
          { id: EMBEDDING_MODEL, object: 'model', created: 1_700_000_000, owned_by: 'fake' },
        ],
      });
    }
    if (req.method === 'POST' && req.path === '/v1/embeddings') {
      const body = req.json as { input: string | string[]; model: string };
      const inputs = typeof body.input === 'string' ? [body.input] : body.input;
      return sendJson(res, 200, {
        object: 'list',
        data: inputs.map((t, index) => ({
          object: 'embedding',
          index,
          embedding: hashEmbedding(t, EMBEDDING_DIM),
        })),
        model: body.model,
        usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
      });
    }
    if (req.method !== 'POST' || req.path !== '/v1/chat/completions') {
      return sendJson(res, 404, { error: { message: `no route ${req.method} ${req.path}` } });
    }
    const body = req.json as ChatRequest;
    chats.push(body);
    const decision = decide(body);
    const id = `chatcmpl-${chats.length}`;
    const created = 1_700_000_000;
    const message =
      'call' in decision
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: `call_${chats.length}`,
                type: 'function',
                function: { name: decision.call.name, arguments: JSON.stringify(decision.call.arguments) },
              },
            ],
          }
        : { role: 'assistant', content: decision.text };
    const finish = 'call' in decision ? 'tool_calls' : 'stop';
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    if (!body.stream) {
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices: [{ index: 0, message, finish_reason: finish }],
        usage,
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (delta: unknown, finishReason: string | null) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }, null));
    if ('call' in decision) {
      const call = message.tool_calls![0]!;
      res.write(
        chunk(
          {
            tool_calls: [
              {
                index: 0,
                id: call.id,
                type: 'function',
                function: { name: call.function.name, arguments: '' },
              },
            ],
          },
          null,
        ),
      );
      res.write(
        chunk({ tool_calls: [{ index: 0, function: { arguments: call.function.arguments } }] }, null),
      );
    } else {
      // Two pieces, as a model streams words.
      const half = Math.ceil(decision.text.length / 2);
      res.write(chunk({ content: decision.text.slice(0, half) }, null));
      res.write(chunk({ content: decision.text.slice(half) }, null));
    }
    res.write(chunk({}, finish));
    res.write('data: [DONE]\n\n');
    res.end();
  };
  const server = await startRecordingServer(handle);
  return { ...server, baseUrl: `${server.url}/v1`, chatRequests: () => [...chats] };
}
