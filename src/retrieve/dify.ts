import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { type Access, identify, mayRead } from '../http/access.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { markBearerHook } from '../http/auth.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { KildeError, toErrorPayload } from '../http/errors.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { type ChunkMeta, toFilterInstant } from '../index/contract.js';
import { collectionNameProblem, identifierProblem, normaliseCollectionName } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import type { ExtraFilter } from './explain.js';
import { SEARCH_LIMITS } from './routes.js';
import type { SearchService } from './search-service.js';

/**
 * Dify's External Knowledge API (docs/dify.md): `POST /retrieval` with `knowledge_id` (a Kilde
 * collection name), `query`, `retrieval_setting {top_k, score_threshold}` and an optional
 * `metadata_condition`, answered by the same search service function as `POST /search` and MCP.
 *
 * Errors use Dify's envelope `{error_code, error_msg}`: 1001 (no `Authorization: Bearer …` header,
 * HTTP 403), 1002 (a key that is not Kilde's, HTTP 403), 2001 (the knowledge base does not exist or
 * this key may not read it: one answer for both, HTTP 404). Other failures keep their HTTP status and
 * use it as `error_code` (400 a request Kilde cannot answer, e.g. an unsupported operator; 422 a
 * malformed body; 502 a failed search).
 */

export const DIFY_ERRORS = {
  authFormat: {
    status: 403,
    code: 1001,
    msg: "Invalid Authorization header format. Expected 'Bearer <api-key>' format.",
  },
  authFailed: { status: 403, code: 1002, msg: 'Authorization failed' },
  noKnowledge: { status: 404, code: 2001, msg: 'The knowledge does not exist' },
} as const;

/** A failure answered in Dify's envelope. */
class DifyError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message);
  }
}

const fail = (e: (typeof DIFY_ERRORS)[keyof typeof DIFY_ERRORS]) => new DifyError(e.status, e.code, e.msg);

const OPERATORS = [
  'contains',
  'not contains',
  'start with',
  'end with',
  'is',
  'is not',
  'in',
  'not in',
  'empty',
  'not empty',
  '=',
  '≠',
  '>',
  '<',
  '≥',
  '≤',
  'before',
  'after',
] as const;

const condition = z.object({
  // Dify's older documents give `name` as a list of field names; the newer ones as one.
  name: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  comparison_operator: z.string(),
  value: z.union([z.string(), z.number(), z.array(z.string())]).nullish(),
});

export const difyBody = z.object({
  knowledge_id: z.string().min(1).max(512),
  query: z
    .string()
    .transform((q) => q.slice(0, SEARCH_LIMITS.queryChars))
    .refine((q) => q.trim().length > 0, 'query must not be empty'),
  retrieval_setting: z.object({
    top_k: z.number().int().min(1),
    score_threshold: z.number().min(0).max(1).default(0),
  }),
  metadata_condition: z
    .object({
      logical_operator: z.enum(['and', 'or']).default('and'),
      conditions: z.array(condition).max(50),
    })
    .nullish(),
});

const difyResponse = z.object({
  records: z.array(
    z.object({
      content: z.string(),
      score: z.number().min(0).max(1),
      title: z.string(),
      metadata: z.record(z.string(), z.unknown()),
    }),
  ),
});

type Condition = z.output<typeof condition>;

const invalid = (message: string) => new DifyError(400, 400, message);

function text(c: Condition, field: string): string {
  if (typeof c.value !== 'string' || c.value.length === 0)
    throw invalid(`metadata_condition: ${field} "${c.comparison_operator}" needs a non-empty string value`);
  const problem = identifierProblem(c.value);
  if (problem) throw invalid(`metadata_condition: ${field} value ${problem}`);
  return c.value;
}

function list(c: Condition, field: string): string[] {
  const values = Array.isArray(c.value) ? c.value : [text(c, field)];
  if (values.length === 0 || values.length > 1000)
    throw invalid(`metadata_condition: ${field} "${c.comparison_operator}" needs 1 to 1000 values`);
  for (const v of values) {
    const problem = identifierProblem(v);
    if (problem || v.length === 0)
      throw invalid(`metadata_condition: ${field} value ${problem ?? 'is empty'}`);
  }
  return [...new Set(values)];
}

function instant(c: Condition): string {
  const raw = typeof c.value === 'number' ? new Date(c.value * 1000).toISOString() : c.value;
  const at = typeof raw === 'string' ? toFilterInstant(raw) : undefined;
  if (at === undefined)
    throw invalid('metadata_condition: created_at needs an ISO 8601 date or a Unix timestamp in seconds');
  return at;
}

/**
 * The conditions Kilde's filter can express, AND-ed (`or` only with one condition):
 *
 * | name | operators | filter |
 * |---|---|---|
 * | `file_id` | `is`, `in` | `file_ids` |
 * | `collection_type` | `is`, `in` | `collection_types` |
 * | `language`, `languages` | `is`, `in`, `contains` | `languages` |
 * | `source` | `start with` | `source_prefix` |
 * | `created_at` | `after`, `>`, `before`, `<` | `created_after`, `created_before` |
 *
 * Anything else is refused with a clear 400 rather than ignored (ignoring it would widen the search).
 */
export function conditionsToFilter(mc: z.output<typeof difyBody>['metadata_condition']): ExtraFilter {
  const filter: ExtraFilter = {};
  if (!mc || mc.conditions.length === 0) return filter;
  if (mc.logical_operator === 'or' && mc.conditions.length > 1)
    throw invalid('metadata_condition: logical_operator "or" is not supported over several conditions');
  const set = <K extends keyof ExtraFilter>(key: K, value: ExtraFilter[K], field: string) => {
    if (filter[key] !== undefined) throw invalid(`metadata_condition: ${field} is given more than once`);
    filter[key] = value;
  };
  for (const c of mc.conditions) {
    const names = Array.isArray(c.name) ? c.name : [c.name];
    if (names.length !== 1) throw invalid('metadata_condition: one field name per condition');
    const field = names[0]!;
    const op = c.comparison_operator;
    if (!(OPERATORS as readonly string[]).includes(op))
      throw invalid(`metadata_condition: unknown comparison_operator ${JSON.stringify(op)}`);
    const unsupported = () =>
      invalid(
        `metadata_condition: ${JSON.stringify(field)} with "${op}" is not supported (see docs/dify.md for the fields and operators Kilde filters on)`,
      );
    switch (field) {
      case 'file_id':
        if (op !== 'is' && op !== 'in') throw unsupported();
        set('fileIds', list(c, field), field);
        break;
      case 'collection_type':
        if (op !== 'is' && op !== 'in') throw unsupported();
        set('collectionTypes', list(c, field), field);
        break;
      case 'language':
      case 'languages': {
        if (op !== 'is' && op !== 'in' && op !== 'contains') throw unsupported();
        const langs = list(c, field).map((l) => l.toLowerCase());
        if (!langs.every((l) => /^[a-z]{2,3}$/.test(l)))
          throw invalid('metadata_condition: languages are ISO 639 codes (two or three letters)');
        set('languages', langs, 'languages');
        break;
      }
      case 'source':
        if (op !== 'start with') throw unsupported();
        set('sourcePrefix', text(c, field), field);
        break;
      case 'created_at':
        if (op === 'after' || op === '>') set('createdAfter', instant(c), 'created_at after');
        else if (op === 'before' || op === '<') set('createdBefore', instant(c), 'created_at before');
        else throw unsupported();
        break;
      default:
        throw unsupported();
    }
  }
  return filter;
}

/** A record's title: the document's title, else its file name, else its file id. */
function titleOf(meta: ChunkMeta): string {
  for (const v of [meta.title, meta.name, meta.source, meta.file_id])
    if (typeof v === 'string' && v) return v;
  return '';
}

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
      const filter = conditionsToFilter(body.metadata_condition);
      // An index that fails is a failed search (502), never a knowledge base that "does not exist".
      const exists = await deps.index.count({ collectionNames: [name] }).catch((err: unknown) => {
        throw new KildeError('SEARCH_FAILED', 'Search failed', { cause: err });
      });
      if (exists === 0) throw fail(DIFY_ERRORS.noKnowledge);
      const answer = await deps.service
        .search({
          queries: [body.query],
          collection_names: [name],
          k: Math.min(body.retrieval_setting.top_k, SEARCH_LIMITS.k),
          filter,
        })
        .catch((err: unknown) => {
          throw err instanceof KildeError
            ? err
            : new KildeError('SEARCH_FAILED', 'Search failed', { cause: err });
        });
      const documents = answer.documents[0] ?? [];
      const records = documents
        .map((content, i) => {
          const meta = answer.metadatas[0]?.[i] ?? ({} as ChunkMeta);
          // Every Kilde path already scores in [0, 1] (docs/dify.md): clamped only against rounding.
          const score = Math.min(1, Math.max(0, answer.distances[0]?.[i] ?? 0));
          return { content, score, title: titleOf(meta), metadata: { ...meta } };
        })
        .filter((r) => r.score >= body.retrieval_setting.score_threshold);
      noteOnRequestLine(request, { knowledge_id: name, records: records.length });
      return { records };
    },
  );
}

function difyErrorReply(error: unknown, request: FastifyRequest, reply: FastifyReply, debug: boolean) {
  if (error instanceof DifyError) {
    noteOnRequestLine(request, { error_code: error.errorCode, reason: error.message });
    return reply.status(error.status).send({ error_code: error.errorCode, error_msg: error.message });
  }
  // Validation, a failed search: Kilde's own mapping of status and message, in Dify's envelope.
  const payload = toErrorPayload(error, debug);
  if (payload.statusCode >= 500) request.log.error({ err: error, code: payload.code }, 'retrieval failed');
  else noteOnRequestLine(request, { code: payload.code, reason: payload.message });
  return reply.status(payload.statusCode).send({
    error_code: payload.statusCode,
    error_msg: payload.message,
    ...(payload.debug ? { debug: payload.debug } : {}),
  });
}
