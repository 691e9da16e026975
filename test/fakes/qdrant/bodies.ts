import { z } from 'zod';

/**
 * The request shapes the fake implements. Bodies have already passed the OpenAPI schema; these
 * strict schemas additionally reject members the fake does not implement (answered 501 and recorded),
 * so a test never passes because the fake silently ignored part of a request.
 */
export const pointIdSchema = z.union([z.string(), z.number().int().nonnegative()]);
export type PointId = z.infer<typeof pointIdSchema>;

const filterSchema = z.unknown(); // evaluated by filter.ts, which rejects what it does not know
export const sparseSchema = z.strictObject({
  indices: z.array(z.number().int()),
  values: z.array(z.number()),
});
export type FakeSparse = z.infer<typeof sparseSchema>;

const vectorParams = z.looseObject({ size: z.number().int(), distance: z.string() });
export const createCollectionSchema = z.strictObject({
  vectors: z
    .union([
      vectorParams.transform((p) => ({ unnamed: true, named: { '': p } })),
      z.record(z.string(), vectorParams).transform((named) => ({ unnamed: false, named })),
    ])
    .optional(),
  sparse_vectors: z
    .record(z.string(), z.strictObject({ modifier: z.enum(['none', 'idf']).nullish() }))
    .nullish(),
  hnsw_config: z.strictObject({ m: z.number().nullish(), payload_m: z.number().nullish() }).nullish(),
  shard_number: z.number().int().min(1).nullish(),
  replication_factor: z.number().int().min(1).nullish(),
  write_consistency_factor: z.number().int().min(1).nullish(),
});
export type CreateCollectionBody = z.infer<typeof createCollectionSchema>;

export const createIndexSchema = z.strictObject({
  field_name: z.string(),
  field_schema: z.union([
    z.literal('keyword'),
    z.literal('integer'),
    z.strictObject({ type: z.literal('keyword'), is_tenant: z.boolean().nullish() }),
  ]),
});

export const upsertSchema = z.strictObject({
  points: z.array(
    z.strictObject({
      id: pointIdSchema,
      vector: z.union([
        z.array(z.number()),
        z.record(z.string(), z.union([z.array(z.number()), sparseSchema])),
      ]),
      payload: z.record(z.string(), z.unknown()).nullish(),
    }),
  ),
});

export const deleteSchema = z.union([
  z.strictObject({ filter: filterSchema }),
  z.strictObject({ points: z.array(pointIdSchema) }),
]);

/** `set_payload` (POST /points/payload): merged into the payload, or into the object at `key`. */
export const setPayloadSchema = z.union([
  z.strictObject({
    payload: z.record(z.string(), z.unknown()),
    filter: filterSchema,
    key: z.string().nullish(),
  }),
  z.strictObject({
    payload: z.record(z.string(), z.unknown()),
    points: z.array(pointIdSchema),
    key: z.string().nullish(),
  }),
]);

/**
 * `batch_update` (POST /points/batch): update operations applied in order; the ones Kilde sends.
 * An operation of another kind is answered 501 like any member the fake does not implement.
 */
export const batchSchema = z.strictObject({
  operations: z.array(
    z.union([
      z.strictObject({ upsert: upsertSchema }),
      z.strictObject({ delete: deleteSchema }),
      z.strictObject({ set_payload: setPayloadSchema }),
    ]),
  ),
});

/** `facet` (POST /facet): counts per distinct value of a keyword-indexed key. */
export const facetSchema = z.strictObject({
  key: z.string(),
  limit: z.number().int().nullish(),
  filter: filterSchema.optional(),
  exact: z.boolean().nullish(),
});

export const countSchema = z.strictObject({ filter: filterSchema.optional(), exact: z.boolean().optional() });

export const scrollSchema = z.strictObject({
  filter: filterSchema.optional(),
  limit: z.number().int().nullish(),
  offset: pointIdSchema.nullish(),
  with_payload: z.union([z.boolean(), z.strictObject({ include: z.array(z.string()) })]).nullish(),
  with_vector: z.literal(false).optional(),
});

export const fusionSchema = z.union([
  z.strictObject({ fusion: z.literal('rrf') }),
  z.strictObject({ rrf: z.strictObject({ k: z.number().int().nullish() }) }),
]);

export interface QueryBody {
  prefetch?: QueryBody | QueryBody[] | null | undefined;
  query?: number[] | FakeSparse | z.infer<typeof fusionSchema> | null | undefined;
  using?: string | null | undefined;
  filter?: unknown;
  limit?: number | null | undefined;
  with_payload?: boolean | null | undefined;
  with_vector?: false | undefined;
}

export const querySchema: z.ZodType<QueryBody> = z.lazy(() =>
  z.strictObject({
    prefetch: z.union([querySchema, z.array(querySchema)]).nullish(),
    query: z.union([z.array(z.number()), sparseSchema, fusionSchema]).nullish(),
    using: z.string().nullish(),
    filter: filterSchema.optional(),
    limit: z.number().int().nullish(),
    with_payload: z.boolean().nullish(),
    with_vector: z.literal(false).optional(),
  }),
);
