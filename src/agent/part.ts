import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { AgentConfig } from '../config/agent.js';
import type { ServicePart } from '../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { createChatClient } from '../llm/chat-client.js';
import { McpMachinery } from '../tools/mcp-endpoint.js';
import { createEchoService, ECHO_MAX_CHARS, type EchoService } from './echo-service.js';
import { rewriteTool } from './mcp.js';

const echoBody = z.object({ text: z.string().min(1).max(ECHO_MAX_CHARS) });
const echoResponse = z.object({ original: z.string(), rewritten: z.string() });

export interface AgentDeps {
  fetch?: typeof fetch;
  /** Time-outs of the LLM calls (tests pass a manual clock). */
  clock?: Clock;
  /** `serverInfo.name` of `/mcp` when this part mounts it (`kilde` in `serve all`). */
  mcpName?: string;
  /**
   * Whether `/mcp` lists `rewrite_concisely`: `serve all` leaves it out when no LLM is configured
   * (every call would fail). Default: listed.
   */
  rewriteTool?: boolean;
}

export interface AgentPart extends ServicePart {
  echo: EchoService;
  mcp: McpMachinery;
}

/**
 * The agent service: `POST /echo` (bearer), the same agent as the MCP tool `rewrite_concisely` at
 * `/mcp`, and a readiness probe of the LLM endpoint.
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
  const mcp = new McpMachinery({
    name: deps.mcpName ?? 'kilde-agent',
    tools: deps.rewriteTool === false ? [] : [rewriteTool(echo, { strict: config.AGENT_STRICT_TOOLS })],
    settings: config,
  });
  return {
    name: 'agent',
    echo,
    mcp,
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
      mcp.mount(app, ctx);
    },
    start: () => mcp.start(),
    close: () => mcp.close(),
  };
}
