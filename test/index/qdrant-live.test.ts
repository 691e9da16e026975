import { afterAll, describe } from 'vitest';
import { runVectorIndexContract } from './contract-suite.js';
import { runQdrantAdapterSuite } from './qdrant-suite.js';
import { openQdrant, type QdrantTarget, rawQdrant, uniqueCollection } from './qdrant-target.js';

/**
 * The same contract and adapter suites against a real Qdrant, e.g.
 * `QDRANT_URL=http://localhost:6333 npx vitest run test/index/qdrant-live.test.ts`
 * (optional `QDRANT_API_KEY`). Skipped without `QDRANT_URL`: the development machines and CI have no
 * Qdrant server and cannot download one, so there the schema-validating fake (qdrant.test.ts)
 * stands in. Every collection is uniquely named and dropped afterwards.
 */
const url = process.env.QDRANT_URL;
const apiKey = process.env.QDRANT_API_KEY;

describe.skipIf(!url)('live Qdrant', () => {
  const target = (): QdrantTarget => ({
    url: url ?? '',
    ...(apiKey ? { apiKey } : {}),
    violations: () => [],
  });
  const created: string[] = [];

  runVectorIndexContract('qdrant (live)', async (opts) => {
    const collection = uniqueCollection();
    created.push(collection);
    return openQdrant(target(), {
      collection,
      sparse: opts.sparse,
      ...(opts.denseDim ? { denseDim: opts.denseDim } : {}),
    });
  });

  runQdrantAdapterSuite('live', target);

  afterAll(async () => {
    for (const c of created.splice(0)) await rawQdrant(target(), 'DELETE', `/collections/${c}`);
  });
});
