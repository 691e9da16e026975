import { z } from 'zod';
import { KildeError } from '../errors.js';
import { RpcCode, ToolError } from '../mcp/json-rpc.js';
import { defineTool } from '../mcp/tool-definition.js';
import { ECHO_MAX_CHARS, type EchoService } from './echo-service.js';

/** The REST body's bounds (1..10000 characters), re-applied because MCP arguments skip that validator. */
const rewriteArgs = z.object({
  text: z
    .string({ error: 'text must be a string' })
    .min(1, 'text must not be empty')
    .max(ECHO_MAX_CHARS, `text must be at most ${ECHO_MAX_CHARS} characters`)
    .describe('The text to rewrite, in any language.'),
});

/**
 * Agents as tools: the echo agent behind `POST /echo`, exposed over MCP as `rewrite_concisely`.
 * An agent offered over REST and MCP calls one shared service function, here `echo.rewrite`, so the
 * two cannot behave differently.
 * `strict` (`AGENT_STRICT_TOOLS`) applies to every tool of the agent.
 */
export function rewriteTool(echo: EchoService, o: { strict: boolean }) {
  return defineTool({
    name: 'rewrite_concisely',
    // As `POST /echo`: the main key only.
    callers: 'main',
    doc: `Rewrite a text more concisely, keeping its meaning and language.
      Call it when the user asks to shorten, tighten or simplify a text, or when a draft should
      be made briefer before sending. Returns only the rewritten text.`,
    // AGENT_STRICT_TOOLS: a strict schema lists `additionalProperties: false` (what strict function
    // calling needs from a client that hands it to its model) and refuses unknown arguments.
    input: o.strict ? rewriteArgs.strict() : rewriteArgs,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, ctx) {
      try {
        const { rewritten } = await echo.rewrite(args.text, ctx.signal);
        // Compact payload: the caller already holds the original text, and chat clients replay
        // tool results into the model's context on every later turn, so a tool returns no more than needed.
        return JSON.stringify({ rewritten });
      } catch (err) {
        // The service raises the kernel's HTTP error type; tools answer with JSON-RPC errors.
        if (err instanceof KildeError && err.code === 'LLM_TIMEOUT')
          throw new ToolError(RpcCode.UpstreamTimeout, 'The language model timed out', { cause: err });
        if (err instanceof KildeError && err.code === 'LLM_FAILED')
          throw new ToolError(RpcCode.UpstreamUnavailable, 'The language model is unavailable', {
            cause: err,
          });
        throw err;
      }
    },
  });
}
