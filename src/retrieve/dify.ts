import type { FastifyRequest } from 'fastify';
import { type Access, identify, mayRead } from '../http/access.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { markBearerHook } from '../http/auth.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { collectionNameProblem, normaliseCollectionName } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import { difyBody, difyResponse } from './dify-body.js';
import { conditionsToQueries, passes } from './dify-conditions.js';
import { DIFY_ERRORS, difyErrorReply, difyFail as fail } from './dify-errors.js';
import { hitsOf, recordsOf } from './dify-records.js';
import { SEARCH_LIMITS } from './routes.js';
import { asSearchError } from './search-error.js';
import type { SearchService } from './search-service.js';

/**
 * Dify's External Knowledge API (docs/dify.md): `POST /retrieval` with `knowledge_id` (a Kilde
 * collection name), `query`, `retrieval_setting {top_k, score_threshold}` and an optional
 * `metadata_condition`, answered by the same search service function as `POST /search` and MCP.
 *
 * This file is the route (authentication, the knowledge base, the searches); the body and answer
 * schemas are in dify-body.ts, `metadata_condition` in dify-conditions.ts, the answer's records in
 * dify-records.ts and Dify's error envelope in dify-errors.ts.
 */

/** Who the request is, in Dify's terms: 1001 without a bearer header, 1002 for a key Kilde does not know. */
function authenticate(request: FastifyRequest, ctx: PartContext): Access {
  const header = request.headers.authorization;
  if (typeof header !== 'string' || !/^Bearer \S/.test(header)) throw fail(DIFY_ERRORS.authFormat);
  const access = identify(header, ctx.config.API_KEY, ctx.tenantKeys);
  if (!access) throw fail(DIFY_ERRORS.authFailed);
  return access;
}

export interface DifyDeps {
  service: SearchService;
  index: VectorIndex;
}

export function registerDifyRoute(app: KildeApp, ctx: PartContext, deps: DifyDeps): void {
  app.post(
    '/retrieval',
    {
      // Authentication comes first, as on every protected route, but answers in Dify's envelope.
      onRequest: markBearerHook(async (request: FastifyRequest) => {
        const access = authenticate(request, ctx);
        request.kildeAccess = access;
        if (access.kind === 'tenant') noteOnRequestLine(request, { key: access.name });
      }),
      bodyLimit: BODY_LIMITS.search,
      config: {
        jsonShape: JSON_SHAPES.dify,
        docs: {
          operationId: 'difyRetrieval',
          summary: "Dify's External Knowledge API: search one knowledge base (a collection)",
          errorBody: 'dify',
        },
      },
      schema: { body: difyBody, response: { 200: difyResponse } },
      errorHandler: (error, request, reply) => difyErrorReply(error, request, reply, ctx.config.DEBUG),
    },
    async (request) => {
      const body = request.body;
      const name = normaliseCollectionName(body.knowledge_id);
      // A name that cannot be a collection, one this key may not read, and one with nothing in it
      // get the same answer: a key learns nothing about another tenant's knowledge bases.
      if (collectionNameProblem(name) || !mayRead(request.kildeAccess, name))
        throw fail(DIFY_ERRORS.noKnowledge);
      const queries = conditionsToQueries(body.metadata_condition);
      // An index that fails is a failed search (502), never a knowledge base that "does not exist".
      const exists = await deps.index.count({ collectionNames: [name] }).catch((err: unknown) => {
        throw asSearchError(err);
      });
      if (exists === 0) throw fail(DIFY_ERRORS.noKnowledge);
      const k = body.retrieval_setting.top_k;
      const answers = await Promise.all(
        queries.map(async ({ filter, check }) => {
          const answer = await deps.service
            .search({
              queries: [body.query],
              collection_names: [name],
              // Conditions checked on the hits need candidates to check: the most a search returns.
              k: check.length > 0 ? SEARCH_LIMITS.k : k,
              filter,
              // Dify asks for matches: a query that finds none answers none, never a small
              // collection's opening chunks at score 0 (that fallback serves Open WebUI's "summarise
              // this file", `POST /search`).
              opening: false,
            })
            .catch((err: unknown) => {
              throw asSearchError(err);
            });
          return hitsOf(answer).filter((hit) => passes(hit.meta, check));
        }),
      );
      const records = recordsOf(answers.flat(), k, body.retrieval_setting.score_threshold);
      noteOnRequestLine(request, { knowledge_id: name, records: records.length });
      return { records };
    },
  );
}
