import { z } from 'zod';
import { bool, int, jsonStringArray, list, requiredString, url } from './fields.js';
import { embeddingRules } from './index-settings.js';
import { searchPieces } from './retrieve.js';
import { kernelPieces } from './shared.js';

/**
 * The MCP endpoint's settings, shared by every service that mounts `/mcp` (tools, agent). The default
 * Host allow-list names the service itself (its compose/Kubernetes name) and `localhost`.
 */
export function mcpPiece(serviceName: string) {
  return {
    // The default makes the value always present; the builder's type cannot know that.
    MCP_ALLOWED_HOSTS: jsonStringArray(
      [`${serviceName}:*`, 'localhost:*'],
      'Host header patterns `/mcp` accepts (DNS-rebinding protection); anything else gets 421. A `:*` suffix matches any port; `localhost` also covers the loopback literals `127.0.0.1` and `[::1]`. `[]` turns Host checking off.',
    ) as z.ZodType<string[], string | undefined>,
    MCP_ALLOWED_ORIGINS: jsonStringArray(
      undefined,
      'Origins `/mcp` accepts when a request carries an `Origin` header (else 403), e.g. `["https://chat.example.com"]`; `:*` matches any port. Unset: `http(s)://` plus each `MCP_ALLOWED_HOSTS` entry. Requests without `Origin` are always allowed.',
    ),
    MCP_BEARER_AUTH: bool(
      false,
      'Requires `Authorization: Bearer <API_KEY>` on every path starting with `/mcp` (401 `missing or invalid bearer token` otherwise).',
    ),
    MCP_JSON_RESPONSE: bool(
      false,
      'Answers each `POST /mcp` with one JSON body instead of an event stream (no progress notifications; for proxies that buffer streams).',
    ),
  };
}

export const weatherPiece = {
  WEATHER_API_KEY: requiredString(
    'Key the tool server sends upstream as `Authorization: Bearer`; callers never see it. Start-up fails without it.',
  ),
  WEATHER_API_BASE_URL: url(
    'http://weather:8000',
    'Weather API base URL; the tool calls `GET {base}/weather?city=&units=`.',
  ),
  WEATHER_CACHE_TTL: int(
    600,
    'Seconds a successful `get_weather` answer is reused for the same city and units (0 disables). Errors are never cached.',
    { min: 0 },
  ),
};

/**
 * Knowledge search over MCP (`search_knowledge`, `list_collections`): off until collections are named.
 * With them the service also needs the search settings (index, embedding, retrieval) of `retrieve`.
 */
export const mcpSearchPiece = {
  MCP_SEARCH_COLLECTIONS: list(
    'Collections (knowledge bases) an MCP client may search with `search_knowledge` and see with `list_collections`, comma-separated or a JSON list. Empty: neither tool is offered, so an MCP client cannot read a tenant by guessing its name. The search uses the index, embedding and retrieval variables of `retrieve`.',
  ),
};

/** Knowledge search over MCP needs a dense embedding decision, as `kilde serve retrieve` does. */
export function mcpSearchRules(
  c: { MCP_SEARCH_COLLECTIONS: readonly string[]; EMBEDDING_PROVIDER?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if (c.MCP_SEARCH_COLLECTIONS.length === 0 || c.EMBEDDING_PROVIDER !== undefined) return;
  ctx.addIssue({
    code: 'custom',
    path: ['EMBEDDING_PROVIDER'],
    message:
      'is required when MCP_SEARCH_COLLECTIONS is set (the knowledge search embeds queries): http-compat, inference-server, inprocess, or none (lexical-only)',
  });
}

export const toolsSchema = z
  .object({ ...kernelPieces, ...weatherPiece, ...mcpPiece('tools'), ...mcpSearchPiece, ...searchPieces })
  .superRefine(mcpSearchRules)
  .superRefine(embeddingRules);
export type ToolsConfig = z.output<typeof toolsSchema>;

/** The MCP subset of any service config that mounts `/mcp`. */
export interface McpSettings {
  MCP_ALLOWED_HOSTS: readonly string[];
  MCP_ALLOWED_ORIGINS?: readonly string[] | undefined;
  MCP_BEARER_AUTH: boolean;
  MCP_JSON_RESPONSE: boolean;
}
