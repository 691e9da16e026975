/**
 * An error's message with every distinct message down its `cause` chain: a wrapped `fetch failed`
 * says nothing, the innermost cause (`connect ECONNREFUSED 127.0.0.1:6333`) is what an operator needs.
 */
export function errorChain(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const message = e instanceof Error ? e.message : String(e);
    if (message && !parts.some((p) => p.includes(message))) parts.push(message);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(': ');
}
