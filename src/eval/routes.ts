import { z } from 'zod';
import { KildeError } from '../errors.js';
import { assertCollectionsAllowed } from '../http/access.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { collectionNameSchema } from '../index/identifiers.js';
import { asSearchError } from '../retrieve/search-error.js';
import type { QrelsMap } from './beir.js';
import { type EvalSearch, evaluate } from './evaluate.js';
import { type EvalRun, evalRunSchema } from './run.js';
import { newRunId, RUN_ID, type RunStore } from './store.js';

/** Bounds of one evaluation request (BEIR's largest public query sets have about 10,000 queries). */
export const EVAL_LIMITS = {
  queries: 10_000,
  /** As `/search` clips a query. */
  queryChars: 2000,
  judgements: 500_000,
  collections: 20,
} as const;

const judgementsSchema = z.record(z.string().min(1), z.record(z.string().min(1), z.number()));

export const evalBody = z
  .object({
    collection_names: z.array(collectionNameSchema).min(1).max(EVAL_LIMITS.collections),
    queries: z
      .array(z.object({ id: z.string().min(1), text: z.string().max(EVAL_LIMITS.queryChars) }))
      .min(1)
      .max(EVAL_LIMITS.queries),
    /** BEIR's qrels as a dict (pytrec_eval's form): query id → document or chunk id → grade. */
    qrels: judgementsSchema,
    /** Chunks fetched per query before pooling to documents. */
    k: z.number().int().min(10).max(100).default(100),
    name: z.string().max(200).optional(),
    /** Keep the run (listed, comparable); false only answers it. */
    store: z.boolean().default(true),
  })
  .superRefine((b, ctx) => {
    const ids = new Set<string>();
    for (const [i, q] of b.queries.entries()) {
      if (ids.has(q.id)) ctx.addIssue({ code: 'custom', path: ['queries', i, 'id'], message: 'repeats' });
      ids.add(q.id);
    }
    const judgements = Object.values(b.qrels).reduce((n, j) => n + Object.keys(j).length, 0);
    if (judgements > EVAL_LIMITS.judgements) {
      ctx.addIssue({ code: 'custom', path: ['qrels'], message: `over ${EVAL_LIMITS.judgements} judgements` });
    }
  });

export interface EvalRouteDeps {
  search: EvalSearch;
  store: RunStore;
  /** The collections of these names that hold no chunk. */
  missingCollections(names: readonly string[]): Promise<string[]>;
  /** The retrieval settings recorded with each run. */
  settings: () => Record<string, string | number | boolean>;
  version: string;
  now?: () => Date;
}

function qrelsOf(raw: z.infer<typeof judgementsSchema>): QrelsMap {
  return new Map(Object.entries(raw).map(([q, docs]) => [q, new Map(Object.entries(docs))]));
}

/**
 * `POST /api/v1/eval` (run labelled queries through the real search path and score them),
 * `GET /api/v1/eval/runs` and `GET /api/v1/eval/runs/{id}` (stored runs). Bearer-protected.
 */
export function registerEvalRoutes(app: KildeApp, ctx: PartContext, deps: EvalRouteDeps): void {
  const now = deps.now ?? (() => new Date());
  app.post(
    '/api/v1/eval',
    {
      onRequest: ctx.scopedAuth,
      bodyLimit: BODY_LIMITS.eval,
      config: { jsonShape: JSON_SHAPES.eval },
      schema: { body: evalBody, response: { 200: evalRunSchema } },
    },
    async (request) => {
      const body = request.body;
      assertCollectionsAllowed(request, body.collection_names);
      const missing = await deps.missingCollections(body.collection_names);
      if (missing.length > 0) {
        throw new KildeError(
          'NOT_FOUND',
          `collection ${missing.map((m) => JSON.stringify(m)).join(', ')} holds no documents`,
        );
      }
      const started = now();
      const result = await evaluate({
        search: deps.search,
        queries: body.queries,
        qrels: qrelsOf(body.qrels),
        collectionNames: body.collection_names,
        k: body.k,
      }).catch((err: unknown) => {
        throw asSearchError(err);
      });
      if (result.queries === 0) {
        throw new KildeError('INVALID_REQUEST', 'no query has a relevant judgement in qrels', {
          variant: 'invalidFields',
        });
      }
      const run: EvalRun = {
        id: newRunId(started),
        ...(body.name === undefined ? {} : { name: body.name }),
        created_at: started.toISOString(),
        kilde_version: deps.version,
        settings: deps.settings(),
        ...result,
      };
      if (body.store) await deps.store.save(run);
      noteOnRequestLine(request, { run: run.id, queries: run.queries, ndcg10: run.metrics['ndcg@10'] });
      return run;
    },
  );
  app.get('/api/v1/eval/runs', { onRequest: ctx.auth }, async () => ({ runs: await deps.store.list() }));
  app.get<{ Params: { id: string } }>('/api/v1/eval/runs/:id', { onRequest: ctx.auth }, async (request) => {
    const id = request.params.id;
    const run = RUN_ID.test(id) ? await deps.store.get(id) : undefined;
    if (!run) throw new KildeError('NOT_FOUND', `no evaluation run ${JSON.stringify(id)}`);
    return run;
  });
}
