import { Counter, Histogram, type Registry } from 'prom-client';

export type Stage = 'generate' | 'embed' | 'search' | 'fuse' | 'rerank';

/** Per-stage latency and fallback counters of the retrieval pipeline. */
export function createRetrieveMetrics(registry: Registry) {
  const stage = new Histogram({
    name: 'retrieve_stage_duration_seconds',
    help: 'Retrieval pipeline stage latency',
    labelNames: ['stage'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const fallbacks = new Counter({
    name: 'retrieve_fallbacks_total',
    help: 'Fallbacks taken: query generation to the last user message, rerank to unranked candidates',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const searches = new Counter({
    name: 'search_requests_total',
    help: 'Search requests by mode and outcome',
    labelNames: ['mode', 'outcome'] as const,
    registers: [registry],
  });
  return {
    async time<T>(name: Stage, fn: () => Promise<T>): Promise<T> {
      const end = stage.startTimer({ stage: name });
      try {
        return await fn();
      } finally {
        end();
      }
    },
    fallback(kind: 'query_generation' | 'rerank') {
      fallbacks.inc({ kind });
    },
    search(mode: string, outcome: 'ok' | 'error') {
      searches.inc({ mode, outcome });
    },
  };
}

export type RetrieveMetrics = ReturnType<typeof createRetrieveMetrics>;
