import type { FastifyReply, FastifyRequest } from 'fastify';
import { toErrorPayload } from '../http/errors.js';
import { noteOnRequestLine } from '../http/request-line.js';

/**
 * Dify's error envelope `{error_code, error_msg}` (docs/dify.md): 1001 (no `Authorization: Bearer …`
 * header, HTTP 403), 1002 (a key that is not Kilde's, HTTP 403), 2001 (the knowledge base does not
 * exist or this key may not read it: one answer for both, HTTP 404). Other failures keep their HTTP
 * status and use it as `error_code` (400 a request Kilde cannot answer, e.g. an unsupported operator;
 * 422 a malformed body; 502 a failed search).
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
export class DifyError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message);
  }
}

export const difyFail = (e: (typeof DIFY_ERRORS)[keyof typeof DIFY_ERRORS]) =>
  new DifyError(e.status, e.code, e.msg);

/** A request Kilde cannot answer (an unknown operator, a value that cannot be one): 400. */
export const difyInvalid = (message: string) => new DifyError(400, 400, message);

/** The route's error handler: a `DifyError` as it is, anything else Kilde's status and message in Dify's envelope. */
export function difyErrorReply(error: unknown, request: FastifyRequest, reply: FastifyReply, debug: boolean) {
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
