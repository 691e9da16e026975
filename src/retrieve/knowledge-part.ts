import type { ServicePart } from '../http/app.js';
import type { ToolSource } from '../mcp/endpoint.js';
import { collectionPolicy, listCollectionsTool, searchKnowledgeTool } from './mcp-tools.js';
import type { SearchStack } from './search-stack.js';

export interface KnowledgePartOptions {
  stack: SearchStack;
  /** `MCP_SEARCH_COLLECTIONS`: the only collections an MCP caller may search. */
  collections: readonly string[];
  /** Whether this part closes the stack (the tool server's own), or another part does (`serve all`). */
  ownsStack: boolean;
}

export interface KnowledgePart extends ServicePart {
  /** `search_knowledge` and `list_collections`, for the app's `/mcp` (src/mcp/endpoint.ts). */
  mcpTools: ToolSource;
}

/**
 * Retrieval as MCP tools: `search_knowledge` and `list_collections` for the app's `/mcp`. The tool
 * calls the stack's search service, the very object `POST /search` calls on the same app.
 */
export function createKnowledgePart(o: KnowledgePartOptions): KnowledgePart {
  const policy = collectionPolicy(o.collections);
  return {
    name: 'knowledge',
    probes: o.ownsStack ? o.stack.probes : [],
    // The service needs the app's metrics registry, so the tools are made with the app, not earlier.
    mcpTools: (ctx) => {
      ctx.log.info({ collections: policy.names }, 'MCP: search_knowledge and list_collections offered');
      return [
        searchKnowledgeTool(o.stack.service(ctx.metrics), policy),
        listCollectionsTool(o.stack.index, policy),
      ];
    },
    register: () => undefined,
    async start() {
      if (o.ownsStack) await o.stack.start();
    },
    async close() {
      if (o.ownsStack) await o.stack.close();
    },
  };
}
