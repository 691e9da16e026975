import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';

/**
 * Stable error codes. Ingestion codes come from the contract (spec 2 §7); the rest are Kilde's.
 *
 * | code | status |
 * |---|---|
 * | INVALID_REQUEST | 400 / 403 / 409 / 413 / 415 / 422 |
 * | UNAUTHORIZED | 401 |
 * | NOT_FOUND | 404 |
 * | LLM_FAILED | 502 |
 * | LLM_TIMEOUT | 504 |
 * | INTERNAL | 500 |
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'UNAUTHORIZED'
  | 'NOT_FOUND'
  | 'NOT_READY'
  | 'LLM_FAILED'
  | 'LLM_TIMEOUT'
  | 'UPSTREAM_FAILED'
  | 'EXTRACTION_FAILED'
  | 'EMBEDDING_FAILED'
  | 'SPARSE_EMBEDDING_FAILED'
  | 'VECTORDB_WRITE_FAILED'
  | 'VECTORDB_FAILED'
  | 'DELETE_FAILED'
  | 'OBJECT_FETCH_FAILED'
  | 'PIPELINE_FAILED'
  | 'SEARCH_FAILED'
  | 'INTERNAL';

export class KildeError extends Error {
  override readonly name = 'KildeError';
  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    message: string,
    options?: { cause?: unknown; detail?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.detail = options?.detail;
  }
  /** Internal detail, shown only with DEBUG=true. */
  readonly detail: string | undefined;
}

export interface ErrorPayload {
  statusCode: number;
  code: ErrorCode;
  message: string;
  /** Only set when DEBUG is on. */
  debug?: string;
}

/** Body formatter: the kernel answers `{detail, code}`; ingestion answers `{status:false, error, code}`. */
export type ErrorBodyFormat = (p: ErrorPayload) => Record<string, unknown>;

export const defaultErrorBody: ErrorBodyFormat = (p) => ({
  detail: p.message,
  code: p.code,
  ...(p.debug === undefined ? {} : { debug: p.debug }),
});

/** Turns anything thrown inside a route into one stable payload. */
export function toErrorPayload(error: unknown, debug: boolean): ErrorPayload {
  if (error instanceof KildeError) {
    const exposeDetail = debug && (error.detail !== undefined || error.cause !== undefined);
    return {
      statusCode: error.statusCode,
      code: error.code,
      message: error.message,
      ...(exposeDetail ? { debug: error.detail ?? describe(error.cause) } : {}),
    };
  }
  const fe = error as Partial<FastifyError> & { validation?: unknown };
  if (hasZodFastifySchemaValidationErrors(error)) {
    const fields = error.validation.map((v) => {
      const path = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
      const where = [v.validationContext === 'body' ? '' : v.validationContext, path]
        .filter(Boolean)
        .join('.');
      return `${where || 'body'}: ${v.message}`;
    });
    return { statusCode: 422, code: 'INVALID_REQUEST', message: `Invalid request: ${fields.join('; ')}` };
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { statusCode: 415, code: 'INVALID_REQUEST', message: 'Unsupported Content-Type' };
  }
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { statusCode: 413, code: 'INVALID_REQUEST', message: 'Request body too large' };
  }
  if (fe.statusCode === 400 || error instanceof SyntaxError) {
    const msg = fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'Request body is empty' : 'Malformed JSON body';
    return {
      statusCode: 400,
      code: 'INVALID_REQUEST',
      message: fe.code?.startsWith('FST_ERR_CTP') ? msg : (fe.message ?? msg),
    };
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { statusCode: fe.statusCode, code: 'INVALID_REQUEST', message: fe.message ?? 'Bad request' };
  }
  return {
    statusCode: 500,
    code: 'INTERNAL',
    message: 'Internal server error',
    ...(debug ? { debug: describe(error) } : {}),
  };
}

function describe(e: unknown): string {
  if (e instanceof Error) return e.stack ?? `${e.name}: ${e.message}`;
  return String(e);
}

export function makeErrorHandler(debug: boolean, format: ErrorBodyFormat = defaultErrorBody) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const payload = toErrorPayload(error, debug);
    if (payload.statusCode >= 500) request.log.error({ err: error, code: payload.code }, 'request failed');
    else
      request.log.info(
        { code: payload.code, status: payload.statusCode, reason: payload.message },
        'request rejected',
      );
    return reply.status(payload.statusCode).send(format(payload));
  };
}
