import type { ServerResponse } from 'node:http';
import type { EmbeddingsFault } from './openai-embeddings.js';
import { sendJson } from './recording-server.js';

/**
 * Plays one scripted fault of a fake embedding server. `answered` means the response is already
 * sent (status, hang-up, malformed); otherwise the request goes on, with `dim` overridden for
 * `wrong-dim` (after any `slow` delay).
 */
export async function applyFault(
  fault: EmbeddingsFault | undefined,
  res: ServerResponse,
  upstream: { error: unknown; malformedBody: string },
): Promise<{ answered: boolean; dim?: number }> {
  switch (fault?.kind) {
    case 'status':
      if (fault.retryAfter !== undefined) res.setHeader('retry-after', fault.retryAfter);
      sendJson(res, fault.status, fault.body ?? upstream.error);
      return { answered: true };
    case 'slow':
      await new Promise((r) => setTimeout(r, fault.delayMs));
      return { answered: false };
    case 'held':
      await fault.until;
      return { answered: false };
    case 'wrong-dim':
      return { answered: false, dim: fault.dim };
    case 'hang-up':
      res.socket?.destroy();
      return { answered: true };
    case 'malformed':
      res.setHeader('content-type', 'application/json');
      res.end(upstream.malformedBody);
      return { answered: true };
    case undefined:
      return { answered: false };
  }
}
