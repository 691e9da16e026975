import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { AgentConfig } from '../config/agent.js';
import type { ServicePart } from '../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { createChatClient } from '../llm/chat-client.js';
import type { ToolSource } from '../mcp/endpoint.js';
import { createEchoService, ECHO_MAX_CHARS, type EchoService } from './echo-service.js';
import { rewriteTool } from './mcp.js';

const echoBody = z.object({ text: z.string().min(1).max(ECHO_MAX_CHARS) });
const echoResponse = z.object({ original: z.string(), rewritten: z.string() });

export interface AgentDeps {
  fetch?: typeof fetch;
  /** Time-outs of the LLM calls (tests pass a manual clock). */
  clock?: Clock;
}

export interface AgentPart extends ServicePart {
  echo: EchoService;
  /** `rewrite_concisely`, for the app's `/mcp` (src/mcp/endpoint.ts). */
  mcpTools: ToolSource;
}

/**
 * The agent service: `POST /echo` (bearer), the same agent as the MCP tool `rewrite_concisely` for
 * `/mcp` (which whoever composes the server mounts), and a readiness probe of the LLM endpoint.
 */
export function createAgentPart(config: AgentConfig, deps: AgentDeps = {}): AgentPart {
  const llm = createChatClient({
    baseUrl: config.AGENT_API_BASE_URL,
    apiKey: config.AGENT_API_KEY,
    model: config.AGENT_MODEL,
    timeoutMs: config.AGENT_TIMEOUT * 1000,
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...(deps.clock ? { clock: deps.clock } : {}),
  });
  const echo = createEchoService(llm);
  const tool = rewriteTool(echo, { strict: config.AGENT_STRICT_TOOLS });
  return {
    name: 'agent',
    echo,
    mcpTools: () => [tool],
    probes: [{ name: 'llm', timeoutMs: 3000, check: (signal) => llm.probe(signal) }],
    register(app, ctx) {
      app.post(
        '/echo',
        {
          onRequest: ctx.auth,
          bodyLimit: BODY_LIMITS.echo,
          config: { jsonShape: JSON_SHAPES.echo },
          schema: { body: echoBody, response: { 200: echoResponse } },
        },
        async (request) => echo.rewrite(request.body.text),
      );
    },
  };
}
