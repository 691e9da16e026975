import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * One log line per request at the default level (`POST /search 200 14 ms`), with whatever the route
 * or the error handler noted about it; Fastify's own two lines per request are off. Probes and
 * metrics scrapes that succeed log at DEBUG, so an orchestrator's health checks stay out of the log.
 */
const notes = new WeakMap<FastifyRequest, Record<string, unknown>>();

const QUIET = new Set(['/health', '/health/ready', '/metrics']);

/** Adds fields to the request's log line (e.g. the number of queries of a search). */
export function noteOnRequestLine(request: FastifyRequest, fields: Record<string, unknown>): void {
  notes.set(request, { ...notes.get(request), ...fields });
}

export async function logRequestLine(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const path = request.url.split('?')[0] ?? request.url;
  const status = reply.statusCode;
  const ms = Math.round(reply.elapsedTime);
  const fields = { method: request.method, path, status, ms, ...notes.get(request) };
  const level = QUIET.has(path) && status < 400 ? 'debug' : status >= 500 ? 'warn' : 'info';
  request.log[level](fields, `${request.method} ${path} ${status} ${ms} ms`);
}
