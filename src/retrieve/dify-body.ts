import { z } from 'zod';
import { SEARCH_DEFAULT_K, SEARCH_LIMITS } from './routes.js';

/** One condition of Dify's `metadata_condition`, as sent (its operator is checked in dify-conditions.ts). */
const condition = z.object({
  // Dify's older documents give `name` as a list of field names; the newer ones as one.
  name: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  comparison_operator: z.string(),
  value: z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()]))]).nullish(),
});

/**
 * What Dify sends (its External Knowledge API, and the bodies its own code builds): `query` may be
 * empty (an image-only turn), `top_k` null or 0 (its "unset": Kilde's default `k`), `score_threshold`
 * null when the threshold is off, and `metadata_condition` with `conditions` or `logical_operator`
 * null (a model dumped with nothing set). None of these is a malformed request.
 */
export const difyBody = z.object({
  knowledge_id: z.string().min(1).max(512),
  query: z
    .string()
    .nullish()
    .transform((q) => (q ?? '').slice(0, SEARCH_LIMITS.queryChars)),
  retrieval_setting: z.object({
    top_k: z
      .number()
      .int()
      .min(0)
      .nullish()
      .transform((k) => (k ? Math.min(k, SEARCH_LIMITS.k) : SEARCH_DEFAULT_K)),
    score_threshold: z
      .number()
      .min(0)
      .max(1)
      .nullish()
      .transform((t) => t ?? 0),
  }),
  metadata_condition: z
    .object({
      logical_operator: z
        .enum(['and', 'or'])
        .nullish()
        .transform((o) => o ?? 'and'),
      conditions: z
        .array(condition)
        .max(50)
        .nullish()
        .transform((c) => c ?? []),
    })
    .nullish(),
});

/** Dify's answer: records with content, a score in [0, 1], a title and the chunk's metadata. */
export const difyResponse = z.object({
  records: z.array(
    z.object({
      content: z.string(),
      score: z.number().min(0).max(1),
      title: z.string(),
      metadata: z.record(z.string(), z.unknown()),
    }),
  ),
});

export type Condition = z.output<typeof condition>;
export type MetadataCondition = z.output<typeof difyBody>['metadata_condition'];
