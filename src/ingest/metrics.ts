import { Counter, Histogram, type Registry } from 'prom-client';
import type { Stage, StageObserver } from './stages.js';

/** The ingestion service's own metrics, on the app's explicit registry. */
export interface IngestMetrics extends StageObserver {
  ingest(outcome: 'success' | 'failure', code: string, seconds: number): void;
  document(bytes: number, chunks: number): void;
  deleted(outcome: 'success' | 'failure'): void;
  route(engine: string, signal: string): void;
}

export function createIngestMetrics(registry: Registry): IngestMetrics {
  const registers = [registry];
  const requests = new Counter({
    name: 'ingest_requests_total',
    help: 'Ingest requests by outcome and code (OK on success)',
    labelNames: ['outcome', 'code'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'ingest_duration_seconds',
    help: 'Wall time of one ingest, gating to response',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  });
  const chunks = new Histogram({
    name: 'ingest_chunks_per_document',
    help: 'Chunks written per ingested document',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    registers,
  });
  const bytes = new Histogram({
    name: 'ingest_document_bytes',
    help: 'Size of ingested documents in bytes',
    buckets: [1e3, 1e4, 1e5, 1e6, 5e6, 1e7, 2.5e7, 5e7, 1e8],
    registers,
  });
  const stages = new Histogram({
    name: 'pipeline_stage_duration_seconds',
    help: 'Duration of one pipeline stage (fetch, convert, chunk, dense, sparse, write)',
    labelNames: ['stage'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });
  const deletes = new Counter({
    name: 'delete_requests_total',
    help: 'Document delete requests by outcome',
    labelNames: ['outcome'] as const,
    registers,
  });
  const routes = new Counter({
    name: 'extraction_route_total',
    help: 'Documents routed by EXTRACTION_ENGINE=auto, by the engine chosen and the signal that decided (vector-flowchart, raster-figure, none, not-docx)',
    labelNames: ['engine', 'signal'] as const,
    registers,
  });
  return {
    ingest(outcome, code, seconds) {
      requests.inc({ outcome, code });
      duration.observe({ outcome }, seconds);
    },
    document(size, count) {
      bytes.observe(size);
      chunks.observe(count);
    },
    deleted: (outcome) => deletes.inc({ outcome }),
    stage: (stage: Stage, seconds) => stages.observe({ stage }, seconds),
    route: (engine, signal) => routes.inc({ engine, signal }),
  };
}
