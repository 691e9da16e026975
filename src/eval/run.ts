import { z } from 'zod';
import type { EvalResult } from './evaluate.js';
import { METRICS, type MetricValues } from './metrics.js';

/** A stored evaluation: what was measured, with what, and every query's scores. */
export interface EvalRun extends EvalResult {
  id: string;
  name?: string | undefined;
  created_at: string;
  kilde_version: string;
  /** The retrieval settings the queries ran with (search mode, models, reranking). */
  settings: Record<string, string | number | boolean>;
}

const metricValues = z.object(
  Object.fromEntries(METRICS.map((m) => [m, z.number()])) as Record<keyof MetricValues, z.ZodNumber>,
);

/** Runs read back (a file, a server's answer) are checked, not trusted. */
export const evalRunSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  created_at: z.string(),
  kilde_version: z.string(),
  settings: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  collection_names: z.array(z.string()),
  k: z.number(),
  queries: z.number(),
  skipped: z.object({ unjudged: z.number(), missing: z.number() }),
  metrics: metricValues,
  per_query: z.array(
    metricValues.extend({ query_id: z.string(), relevant: z.number(), retrieved: z.array(z.string()) }),
  ),
});

/** What listing shows of a run. */
export interface RunSummary {
  id: string;
  name?: string | undefined;
  created_at: string;
  collection_names: string[];
  queries: number;
  metrics: MetricValues;
}

export function summaryOf(run: EvalRun): RunSummary {
  return {
    id: run.id,
    ...(run.name === undefined ? {} : { name: run.name }),
    created_at: run.created_at,
    collection_names: run.collection_names,
    queries: run.queries,
    metrics: run.metrics,
  };
}
