import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { type Access, identify, mayRead } from '../http/access.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { markBearerHook } from '../http/auth.js';
import { BODY_LIMITS, JSON_SHAPES } from '../http/body-limits.js';
import { toErrorPayload } from '../http/errors.js';
import { noteOnRequestLine } from '../http/request-line.js';
import { type ChunkMeta, toFilterInstant } from '../index/contract.js';
import { collectionNameProblem, identifierProblem, normaliseCollectionName } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import type { ExtraFilter } from './explain.js';
import { SEARCH_DEFAULT_K, SEARCH_LIMITS } from './routes.js';
import { asSearchError } from './search-error.js';
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
  value: z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()]))]).nullish(),
});

/**
 * What Dify sends (its External Knowledge API, and the bodies its own code builds): `query` may be
 * empty (an image-only turn), `top_k` null or 0 (its "unset": Kilde's default `k`), `score_threshold`
 * null when the threshold is off, and `metadata_condition` with `conditions` or `logical_operator`
 * null (a model dumped with nothing set). None of these is a malformed request.
 */
export const difyBody = z.object({
  knowledge_id: z.string().min(1).max(512),
  query: z
    .string()
    .nullish()
    .transform((q) => (q ?? '').slice(0, SEARCH_LIMITS.queryChars)),
  retrieval_setting: z.object({
    top_k: z
      .number()
      .int()
      .min(0)
      .nullish()
      .transform((k) => (k ? Math.min(k, SEARCH_LIMITS.k) : SEARCH_DEFAULT_K)),
    score_threshold: z
      .number()
      .min(0)
      .max(1)
      .nullish()
      .transform((t) => t ?? 0),
  }),
  metadata_condition: z
    .object({
      logical_operator: z
        .enum(['and', 'or'])
        .nullish()
        .transform((o) => o ?? 'and'),
      conditions: z
        .array(condition)
        .max(50)
        .nullish()
        .transform((c) => c ?? []),
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
type MetadataCondition = z.output<typeof difyBody>['metadata_condition'];

const invalid = (message: string) => new DifyError(400, 400, message);

/**
 * Dify's built-in metadata fields, as Kilde's chunk metadata holds them: the file's name, who
 * uploaded it, and its date (Kilde keeps one, the document's `created_at`). Any other name is
 * looked up as it is (`title`, `subject`, `authors`, `page_number`…, or a custom field).
 */
const FIELD_ALIASES: Record<string, string> = {
  document_name: 'name',
  uploader: 'user_id',
  upload_date: 'created_at',
  last_update_date: 'created_at',
  language: 'languages',
};

function text(c: Condition, field: string): string {
  if (typeof c.value !== 'string' || c.value.length === 0)
    throw invalid(`metadata_condition: ${field} "${c.comparison_operator}" needs a non-empty string value`);
  const problem = identifierProblem(c.value);
  if (problem) throw invalid(`metadata_condition: ${field} value ${problem}`);
  return c.value;
}

function list(c: Condition, field: string): string[] {
  const values = Array.isArray(c.value) ? c.value.map(String) : [text(c, field)];
  if (values.length === 0 || values.length > 1000)
    throw invalid(`metadata_condition: ${field} "${c.comparison_operator}" needs 1 to 1000 values`);
  for (const v of values) {
    const problem = identifierProblem(v);
    if (problem || v.length === 0)
      throw invalid(`metadata_condition: ${field} value ${problem ?? 'is empty'}`);
  }
  return [...new Set(values)];
}

/** A condition's date: ISO 8601, or a Unix timestamp in seconds (Dify's time fields). */
function instant(c: Condition, field: string): string {
  const raw =
    typeof c.value === 'number' || (typeof c.value === 'string' && /^\d{9,11}$/.test(c.value))
      ? new Date(Number(c.value) * 1000).toISOString()
      : c.value;
  const at = typeof raw === 'string' ? toFilterInstant(raw) : undefined;
  if (at === undefined)
    throw invalid(`metadata_condition: ${field} needs an ISO 8601 date or a Unix timestamp in seconds`);
  return at;
}

/** One condition as a field of Kilde's index filter, when the filter expresses it exactly. */
function pushdown(c: Condition, field: string): Partial<ExtraFilter> | undefined {
  const op = c.comparison_operator;
  const one = op === 'is' || op === '=' || op === 'in';
  switch (field) {
    case 'file_id':
      return one ? { fileIds: list(c, field) } : undefined;
    case 'collection_type':
      return one ? { collectionTypes: list(c, field) } : undefined;
    case 'languages': {
      if (!one && op !== 'contains') return undefined;
      const langs = list(c, field).map((l) => l.toLowerCase());
      if (!langs.every((l) => /^[a-z]{2,3}$/.test(l)))
        throw invalid('metadata_condition: languages are ISO 639 codes (two or three letters)');
      return { languages: langs };
    }
    case 'source':
      return op === 'start with' ? { sourcePrefix: text(c, field) } : undefined;
    case 'created_at':
      if (op === 'after' || op === '>') return { createdAfter: instant(c, field) };
      if (op === 'before' || op === '<') return { createdBefore: instant(c, field) };
      if (['≥', '≤', '=', '≠', 'is', 'is not'].includes(op)) instant(c, field);
      return undefined;
    default:
      return undefined;
  }
}

/** A metadata value as a list of strings (a missing field is an empty list). */
function valuesOf(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  return (Array.isArray(v) ? v : [v]).filter((x) => x !== null && x !== undefined).map(String);
}

const asNumber = (s: string) => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : undefined);

/** `a` against `b`: as numbers when both are, as instants when both are dates, else as text. */
function compare(a: string, b: string): number {
  const [x, y] = [asNumber(a), asNumber(b)];
  if (x !== undefined && y !== undefined) return x - y;
  const [s, t] = [Date.parse(a), Date.parse(b)];
  if (!Number.isNaN(s) && !Number.isNaN(t)) return s - t;
  return a.localeCompare(b);
}

const DATE_OPERATORS = new Set(['before', 'after', '>', '<', '≥', '≤', '=', '≠', 'is', 'is not']);

/** Whether one chunk's metadata satisfies one condition (Dify's operators; text matching ignores case). */
function holds(meta: ChunkMeta, field: string, c: Condition): boolean {
  const actual = valuesOf(meta[field]);
  const given = valuesOf(c.value);
  // A date compared as a date (Unix seconds too); `pushdown` has checked it is one before any search.
  const dated = field === 'created_at' && DATE_OPERATORS.has(c.comparison_operator) && given.length > 0;
  const target = dated ? [instant(c, field)] : given;
  const lower = (s: string) => s.toLowerCase();
  const any = (f: (a: string, b: string) => boolean) =>
    actual.some((a) => target.some((b) => f(lower(a), lower(b))));
  switch (c.comparison_operator) {
    case 'contains':
      return any((a, b) => a.includes(b));
    case 'not contains':
      return !any((a, b) => a.includes(b));
    case 'start with':
      return any((a, b) => a.startsWith(b));
    case 'end with':
      return any((a, b) => a.endsWith(b));
    case 'is':
    case 'in':
      return any((a, b) => a === b || compare(a, b) === 0);
    case 'is not':
    case 'not in':
      return !any((a, b) => a === b || compare(a, b) === 0);
    case 'empty':
      return actual.every((a) => a.trim() === '');
    case 'not empty':
      return actual.some((a) => a.trim() !== '');
    case '=':
      return any((a, b) => compare(a, b) === 0);
    case '≠':
      return !any((a, b) => compare(a, b) === 0);
    case '>':
    case 'after':
      return any((a, b) => compare(a, b) > 0);
    case '<':
    case 'before':
      return any((a, b) => compare(a, b) < 0);
    case '≥':
      return any((a, b) => compare(a, b) >= 0);
    case '≤':
      return any((a, b) => compare(a, b) <= 0);
    default:
      return false;
  }
}

/** One search of a Dify request: the index filter, and the conditions checked on each hit. */
export interface DifyQuery {
  filter: ExtraFilter;
  check: { field: string; condition: Condition }[];
}

/**
 * `metadata_condition` as the searches that answer it. `and`: one search, whose conditions the
 * index filter expresses go into it (`file_id`, `collection_type`, `language(s)`, `source` "start
 * with", `created_at` "after"/"before"), the others are checked on each hit. `or` (what Dify's
 * automatic filtering sends): one search per condition, the hits united. Dify's built-in field
 * names are mapped (`FIELD_ALIASES`), every operator of Dify's is understood; only an operator Dify
 * does not have, or a value that cannot be one (a date that is not a date, control characters), is
 * a 400.
 */
export function conditionsToQueries(mc: MetadataCondition): DifyQuery[] {
  const conditions = mc?.conditions ?? [];
  if (conditions.length === 0) return [{ filter: {}, check: [] }];
  const groups = mc?.logical_operator === 'or' ? conditions.map((c) => [c]) : [conditions];
  return groups.map((group) => {
    const filter: ExtraFilter = {};
    const check: DifyQuery['check'] = [];
    for (const c of group) {
      const names = Array.isArray(c.name) ? c.name : [c.name];
      if (names.length !== 1) throw invalid('metadata_condition: one field name per condition');
      const field = FIELD_ALIASES[names[0]!] ?? names[0]!;
      if (!(OPERATORS as readonly string[]).includes(c.comparison_operator))
        throw invalid(
          `metadata_condition: unknown comparison_operator ${JSON.stringify(c.comparison_operator)}`,
        );
      const part = pushdown(c, field);
      // A field the filter already holds (`file_id is a` and `file_id is b`) is checked on the hits.
      const key = part && (Object.keys(part)[0] as keyof ExtraFilter);
      if (part && key && filter[key] === undefined) Object.assign(filter, part);
      else check.push({ field, condition: c });
    }
    return { filter, check };
  });
}

/** Whether a hit's metadata satisfies every condition left to check. */
export function passes(meta: ChunkMeta, check: DifyQuery['check']): boolean {
  return check.every(({ field, condition }) => holds(meta, field, condition));
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
          return (answer.documents[0] ?? [])
            .map((content, i) => ({
              content,
              meta: answer.metadatas[0]?.[i] ?? ({} as ChunkMeta),
              // Every Kilde path already scores in [0, 1] (docs/dify.md): clamped only against rounding.
              score: Math.min(1, Math.max(0, answer.distances[0]?.[i] ?? 0)),
            }))
            .filter((hit) => passes(hit.meta, check));
        }),
      );
      // `or`: the searches' hits united, each chunk once with its best score, best first.
      const best = new Map<string, { content: string; meta: ChunkMeta; score: number }>();
      for (const hit of answers.flat()) {
        const key = `${hit.meta.file_id}\u0000${hit.meta.ingest_version}\u0000${hit.meta.split_id}\u0000${hit.content}`;
        const seen = best.get(key);
        if (!seen || hit.score > seen.score) best.set(key, hit);
      }
      const records = [...best.values()]
        .sort((a, b) => b.score - a.score)
        .slice(0, k)
        .filter((hit) => hit.score >= body.retrieval_setting.score_threshold)
        .map((hit) => ({
          content: hit.content,
          score: hit.score,
          title: titleOf(hit.meta),
          metadata: { ...hit.meta },
        }));
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
