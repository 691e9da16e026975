import type { McpSettings } from '../config/tools.js';
import type { ServicePart } from '../http/app.js';
import { McpMachinery } from '../tools/mcp-endpoint.js';
import { collectionPolicy, listCollectionsTool, searchKnowledgeTool } from './mcp-tools.js';
import type { SearchStack } from './search-stack.js';

export interface KnowledgePartOptions {
  stack: SearchStack;
  /** `MCP_SEARCH_COLLECTIONS`: the only collections an MCP caller may search. */
  collections: readonly string[];
  settings: McpSettings;
  /** Whether this part closes the stack (the tool server's own), or another part does (`serve all`). */
  ownsStack: boolean;
  /** `serverInfo.name` of `/mcp` when this part mounts it first (`kilde` in `serve all`). */
  mcpName?: string;
}

/**
 * Retrieval as MCP tools: `search_knowledge` and `list_collections` on `/mcp`, joining the route of
 * whatever other part mounts it on the app (the tool server's, the agent's in `serve all`). The tool
 * calls the stack's search service, the very object `POST /search` calls on the same app.
 */
export function createKnowledgePart(o: KnowledgePartOptions): ServicePart {
  const policy = collectionPolicy(o.collections);
  let mcp: McpMachinery | undefined;
  return {
    name: 'knowledge',
    probes: o.ownsStack ? o.stack.probes : [],
    register(app, ctx) {
      // The service needs the app's metrics registry, so the tools are made here, not earlier.
      mcp = new McpMachinery({
        name: o.mcpName ?? 'kilde-knowledge',
        tools: [
          searchKnowledgeTool(o.stack.service(ctx.metrics), policy),
          listCollectionsTool(o.stack.index, policy),
        ],
        settings: o.settings,
      });
      mcp.mount(app, ctx);
      ctx.log.info({ collections: policy.names }, 'MCP: search_knowledge and list_collections offered');
    },
    async start() {
      if (o.ownsStack) await o.stack.start();
      await mcp?.start();
    },
    async close() {
      await mcp?.close();
      if (o.ownsStack) await o.stack.close();
    },
  };
}
