import type { Logger } from 'pino';
import type { ServicePart } from './app.js';

/**
 * Starting and closing a service's parts, apart from the HTTP app (src/http/app.ts) so that the local
 * CLI, which drives the parts without an app, does not load fastify.
 */

/** Runs every part's start hook (warm-ups); call before listening. */
export async function startParts(parts: readonly ServicePart[]) {
  for (const part of parts) await part.start?.();
}

/** Closes the parts, last first (the index, listed first, after everything that uses it); a failure is logged. */
export async function closeParts(parts: readonly ServicePart[], logger: Logger): Promise<void> {
  for (const part of [...parts].reverse()) {
    try {
      await part.close?.();
    } catch (err) {
      logger.warn({ err, part: part.name }, 'close failed');
    }
  }
}
