import type { IncomingMessage } from 'node:http';
import { errorCodes, type FastifyRequest } from 'fastify';
import { KildeError } from '../errors.js';
import { JSON_SHAPES } from './body-limits.js';
import { type JsonShapeLimit, type JsonShapeLimits, JsonShapeScanner } from './json-shape.js';
import { noteOnRequestLine } from './request-line.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's structural limits of a JSON body (`JSON_SHAPES`); `JSON_SHAPES.default` without. */
    jsonShape?: JsonShapeLimits;
  }
}

/** Fastify's own JSON parser (`getDefaultJsonParser`): secure-json-parse, proto-poisoning refused. */
type StringParser = (
  request: FastifyRequest,
  body: string,
  done: (err: Error | null, body?: unknown) => void,
) => void;

const WHAT: Record<JsonShapeLimit, string> = {
  depth: 'levels of nesting',
  keys: 'keys in one object',
  rootKeys: 'keys at the top level',
  items: 'items in one array',
  values: 'keys and values in all',
};

/** A body refused for its structure: 413 `INVALID_REQUEST`; `/mcp` answers it as a JSON-RPC error. */
export class BodyShapeError extends KildeError {
  constructor(
    readonly limit: JsonShapeLimit,
    readonly max: number,
  ) {
    super('INVALID_REQUEST', `Request body too complex: more than ${max} ${WHAT[limit]}`, {
      variant: 'tooLarge',
    });
  }
}

/**
 * The JSON content-type parser of every route, in place of Fastify's: the same byte limit (the
 * route's `bodyLimit`), the same errors, and the same parse (Fastify's parser is handed the text),
 * but the body's structure is counted chunk by chunk as it arrives (`JsonShapeScanner`), so a body
 * over the route's `jsonShape` is refused when it crosses the limit, before anything parses it.
 * Fastify's own reading (`rawBody`, lib/content-type-parser.js) is followed step for step.
 */
export function jsonBodyParser(parse: StringParser) {
  return function parseJsonBody(
    request: FastifyRequest,
    payload: IncomingMessage,
    done: (err: Error | null, body?: unknown) => void,
  ): void {
    const limit = request.routeOptions.bodyLimit;
    const contentLength = Number(request.headers['content-length']);
    if (contentLength > limit) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    const shape: JsonShapeLimits = request.routeOptions.config?.jsonShape ?? JSON_SHAPES.default;
    const scanner = new JsonShapeScanner(shape);
    const chunks: Buffer[] = [];
    let received = 0;

    const stop = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    function onData(data: Buffer | string) {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      received += chunk.length;
      if (received > limit) {
        stop();
        done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      const over = scanner.feed(chunk);
      if (over) {
        stop();
        // Nothing more of it is kept or scanned; Node discards the rest of the body.
        chunks.length = 0;
        noteOnRequestLine(request, { shape: over, bytesRead: received });
        done(new BodyShapeError(over, shape[over] ?? shape.keys));
        return;
      }
      chunks.push(chunk);
    }
    function onEnd(err?: Error & { statusCode?: number }) {
      stop();
      if (err != null) {
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        done(err);
        return;
      }
      if (!Number.isNaN(contentLength) && received !== contentLength) {
        done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      // Decoded once, whole: a multi-byte character split across chunks stays intact.
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)).toString('utf8');
      try {
        parse(request, text, done);
      } catch (error) {
        done(error as Error);
      }
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  };
}
