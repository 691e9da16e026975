import { describeCause } from '../errors.js';
import type { KildeApp } from './app.js';

/** A readiness check. It resolves when the dependency is usable and throws (with a short reason) otherwise. */
export interface Probe {
  name: string;
  /** Per-probe time-out in ms (default 2000). */
  timeoutMs?: number;
  check: (signal: AbortSignal) => Promise<void>;
  /**
   * A dependency of one feature of a process that does more (the LLM of `serve all`, whose search
   * works without it): its failure is reported under `degraded` and leaves the process ready.
   */
  degradedOnly?: boolean;
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

/**
 * `GET /health` (liveness) and `GET /health/ready` (every probe, in parallel): 503 when a probe
 * fails, 200 `{"status":"ok","degraded":"<probe>: <reason>"}` when only `degradedOnly` ones do.
 */
export function registerHealth(app: KildeApp, probes: readonly Probe[]) {
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/health/ready', async (request, reply) => {
    const results = await Promise.all(probes.map(runProbe));
    const failures = results.filter((f, i): f is string => f !== undefined && !probes[i]!.degradedOnly);
    const degraded = results.filter((f, i): f is string => f !== undefined && !!probes[i]!.degradedOnly);
    if (failures.length === 0 && degraded.length === 0) return { status: 'ok' };
    request.log.warn({ failures, degraded }, 'readiness probe failed');
    if (failures.length === 0) return { status: 'ok', degraded: degraded.join('; ') };
    return reply.status(503).send({ status: 'error', detail: [...failures, ...degraded].join('; ') });
  });
}
