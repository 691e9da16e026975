import type { FastifyReply, FastifyRequest } from 'fastify';

/** What a server-sent event stream follows: a job or a batch, read again on each of its changes. */
export interface Followed<T> {
  id: string;
  /** Its state when the request came (the caller answered 404 without one). */
  first: T;
  read(): Promise<T | undefined>;
  /** The queue's change notifications (ids); returns the unsubscribe. */
  subscribe(fn: (id: string) => void): () => void;
  /** The events to send for this state ('' for none) and whether the stream ends after them. */
  render(item: T): { text: string; end: boolean };
  /** For the log line when a read fails. */
  what: string;
}

/**
 * Answers with `text/event-stream` and follows `f` until it says the end (or the client leaves, or
 * it is gone): reads are chained so events keep their order, and coalesced (the changes that arrive
 * while one read is due share it); a comment line every `keepAliveMs` keeps proxies from closing an
 * idle stream. The jobs API's and the job batches' streams.
 */
export function streamEvents<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  keepAliveMs: number,
  f: Followed<T>,
): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(request.id),
  });
  let ended = false;
  let chain = Promise.resolve();
  let due = false;
  const end = () => {
    if (ended) return;
    ended = true;
    unsubscribe();
    clearInterval(keepAlive);
    res.end();
  };
  const send = (item: T | undefined) => {
    if (ended) return;
    if (item === undefined) return end();
    const { text, end: last } = f.render(item);
    if (text !== '') res.write(text);
    if (last) end();
  };
  const next = () => {
    due = false;
    return f.read();
  };
  const unsubscribe = f.subscribe((changed) => {
    if (changed !== f.id || ended || due) return;
    due = true;
    chain = chain.then(next).then(send, (err: unknown) => {
      request.log.warn({ err, id: f.id }, `${f.what} event stream: reading it failed; closing`);
      end();
    });
  });
  const keepAlive = setInterval(() => {
    if (!ended) res.write(': keep-alive\n\n');
  }, keepAliveMs);
  keepAlive.unref();
  res.on('close', end);
  send(f.first);
  // Read once more after subscribing, so no change between the first read and the subscription is lost.
  chain = chain.then(next).then(send, () => end());
}
