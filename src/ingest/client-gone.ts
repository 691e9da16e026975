import type { FastifyReply } from 'fastify';

/**
 * Aborted when the client's connection closes before the answer is complete: an ingest whose caller
 * is gone stops before its version becomes visible, so the previous version stays.
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const res = reply.raw;
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
