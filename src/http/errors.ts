import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { describeCause, type ErrorCode, KildeError } from '../errors.js';
import { noteOnRequestLine } from './request-line.js';

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
    // Every 5xx is hidden the same way: the code's public message, the thrower's (which may name
    // internal endpoints) only in `debug`.
    const internal = error.detail ?? (error.cause === undefined ? undefined : describeCause(error.cause));
    const shown = error.exposed ? internal : [error.message, internal].filter(Boolean).join(': ');
    return {
      statusCode: error.statusCode,
      code: error.code,
      message: error.publicMessage,
      ...(debug && shown ? { debug: shown } : {}),
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
    else noteOnRequestLine(request, { code: payload.code, reason: payload.message });
    return reply.status(payload.statusCode).send(format(payload));
  };
}
