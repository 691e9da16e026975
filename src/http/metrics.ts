import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { lanceCacheUsage } from '../index/lancedb-cache.js';
import type { KildeApp } from './app.js';

export function createMetricsRegistry(): Registry {
  return new Registry();
}

/** Request count and latency by route and status, on the app's explicit registry. */
export function registerHttpMetrics(app: KildeApp, registry: Registry) {
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  registerMemoryGauges(registry);
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
  });
}

/**
 * The process's memory, read at each scrape: its resident set and what LanceDB's caches hold of it
 * (bounded by `LANCEDB_INDEX_CACHE_MB` + `LANCEDB_METADATA_CACHE_MB`; 0 where the index is Qdrant).
 */
function registerMemoryGauges(registry: Registry): void {
  const registers = [registry];
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes',
    registers,
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  new Gauge({
    name: 'lancedb_cache_bytes',
    help: "Bytes held by the process's LanceDB index and metadata caches",
    registers,
    collect() {
      this.set(lanceCacheUsage().bytes);
    },
  });
  new Gauge({
    name: 'lancedb_cache_entries',
    help: "Entries in the process's LanceDB index and metadata caches (approximate)",
    registers,
    collect() {
      this.set(lanceCacheUsage().items);
    },
  });
}

/** `GET /metrics`: bearer-protected; 404 (like any unknown route) when disabled. */
export function registerMetricsRoute(
  app: KildeApp,
  registry: Registry,
  auth: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
) {
  app.get('/metrics', { onRequest: auth }, async (_request, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}
