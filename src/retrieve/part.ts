import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { RetrieveConfig } from '../config/retrieve.js';
import type { ServicePart } from '../http/app.js';
import type { VectorIndex } from '../index/store.js';
import { registerSearchRoutes } from './routes.js';
import { createSearchStack, type SearchStack } from './search-stack.js';

export interface RetrieveDeps {
  log: Logger;
  fetch?: typeof fetch;
  /** The agentic loop's deadline runs on it (tests pass a manual clock). */
  clock?: Clock;
  /** Tests and `serve all` pass an already open index. */
  index?: VectorIndex;
}

export interface RetrievePart extends ServicePart {
  /** The search stack behind `POST /search`; `serve all` hands it to the MCP knowledge tools too. */
  stack: SearchStack;
}

/** The retrieval service: `POST /search` over the shared index (read-only). */
export async function createRetrievePart(config: RetrieveConfig, deps: RetrieveDeps): Promise<RetrievePart> {
  const stack = await createSearchStack(config, deps);
  return {
    name: 'retrieve',
    stack,
    probes: stack.probes,
    register(app, ctx) {
      registerSearchRoutes(app, ctx, stack.service(ctx.metrics));
    },
    start: () => stack.start(),
    close: () => stack.close(),
  };
}
