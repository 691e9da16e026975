import { describeCause } from '../errors.js';
import type { KildeApp } from './app.js';

/** A readiness check. It resolves when the dependency is usable and throws (with a short reason) otherwise. */
export interface Probe {
  name: string;
  /** Per-probe time-out in ms (default 2000). */
  timeoutMs?: number;
  check: (signal: AbortSignal) => Promise<void>;
}

export async function runProbe(probe: Probe): Promise<string | undefined> {
  const timeoutMs = probe.timeoutMs ?? 2000;
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      ac.abort();
      resolve(`${probe.name}: no answer within ${timeoutMs} ms`);
    }, timeoutMs);
  });
  try {
    return await Promise.race([
      probe.check(ac.signal).then(
        () => undefined,
        (e: unknown) => `${probe.name}: ${describeCause(e)}`,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** `GET /health` (liveness) and `GET /health/ready` (every probe, in parallel). */
export function registerHealth(app: KildeApp, probes: readonly Probe[]) {
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/health/ready', async (request, reply) => {
    const failures = (await Promise.all(probes.map(runProbe))).filter((f): f is string => f !== undefined);
    if (failures.length === 0) return { status: 'ok' };
    request.log.warn({ failures }, 'readiness probe failed');
    return reply.status(503).send({ status: 'error', detail: failures.join('; ') });
  });
}
