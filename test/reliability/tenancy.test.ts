import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { RESERVED_TENANT_VALUES } from '../../src/index/reserved.js';
import type { VectorIndex } from '../../src/index/store.js';
import { tempDir } from '../cli/helpers.js';
import { hashEmbedding } from '../fakes/hash-embedding.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { logSink } from '../helpers/app.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { reliabilitySettings } from './settings.js';

/**
 * Tenancy under hostile collection names (issue #18 item 6): filter-injection strings and
 * look-alike names in `collection_names` never return another collection's chunk, through
 * `POST /search` and directly against the index (whatever rule the route applies to names), on
 * LanceDB and on the Qdrant fake. Dense, lexical and hybrid sides, scroll and count.
 */
const settings = reliabilitySettings('tenancy');
const RUNS = settings.long ? 1000 : 60;
const KEY = 'tenancy-key';
const AUTH = { authorization: `Bearer ${KEY}` };
const DIM = 16;

/** Collections that look alike or smuggle filter syntax; each holds one chunk. */
const COLLECTIONS = [
  'kb-1',
  'kb-10',
  'KB-1',
  'kb_1',
  'kb-1-',
  'kb',
  'kb ',
  ' kb',
  "kb'1",
  'kb"1',
  'kb%',
  'kb_%',
  'kb*',
  'ｋｂ-1',
  'kb\u200b-1',
  'kb-1\u0301',
  "x' OR '1'='1",
  "') OR true --",
  '" OR ""="',
  '{"$ne": null}',
  'null',
  '*',
] as const;

const INJECTIONS = [
  "' OR 1=1 --",
  "kb-1' OR collection_name IS NOT NULL --",
  "kb-1') OR ('1'='1",
  'kb%',
  '%',
  '_',
  '.*',
  '*',
  '',
  ' ',
  'kb-1\u0000',
  '\u0000',
  "\\'",
  ...RESERVED_TENANT_VALUES,
  'kilde:staging',
];

const requested = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...COLLECTIONS, 'kb-1', 'kb_1') },
    { weight: 2, arbitrary: fc.constantFrom(...INJECTIONS) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  ),
  { minLength: 1, maxLength: 4 },
);

const ENGINES = ['lancedb', 'qdrant'] as const;

describe.each(ENGINES)('%s: hostile collection names', { timeout: settings.timeoutMs }, (engine) => {
  let qdrant: QdrantFake | undefined;
  let embed: FakeEmbeddingsServer;
  let app: KildeApp;
  let index: VectorIndex;
  /** Chunks per collection name as stored (the name rule may have refused or normalised some). */
  const stored = new Map<string, number>();
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    embed = await startFakeOpenAIEmbeddings({ dim: DIM });
    if (engine === 'qdrant') qdrant = await startQdrantFake();
    const tmp = await tempDir('kilde-tenancy-');
    cleanups.push(tmp.remove);
    const config = parseConfig(allSchema, {
      API_KEY: KEY,
      KILDE_DATA_DIR: tmp.dir,
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      EMBEDDING_MODEL: 'fake-embed',
      EMBEDDING_DIM: String(DIM),
      ...(qdrant ? { VECTORDB_URI: qdrant.url } : {}),
    });
    const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
    const all = await composeAll(config, log);
    index = all.index;
    app = await buildApp(config, { logger: log, parts: all.parts });
    await startParts(all.parts);
    cleanups.push(() => app.close());
    for (const [i, name] of COLLECTIONS.entries()) {
      const { body, headers } = multipartBody(
        { file_id: `t${i}`, collection_name: name, user_id: 'u1' },
        {
          name: `t${i}.md`,
          content: `Shared apple banana text, owned by tenant number ${i}.\n`,
          type: 'text/markdown',
        },
      );
      const res = await app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      // The collection-name rule may refuse a name (400, INVALID_REQUEST: the multipart form's fields
      // are read by the route, not a schema); a stored one is read back as stored.
      expect([200, 400], `ingest into ${JSON.stringify(name)}: ${res.body}`).toContain(res.statusCode);
      if (res.statusCode !== 200) continue;
      const [point] = (await index.scroll({ fileId: `t${i}`, chunksOnly: true }, { limit: 1 })).points;
      stored.set(point!.meta.collection_name, (stored.get(point!.meta.collection_name) ?? 0) + 1);
    }
    expect(stored.size).toBeGreaterThan(5);
  });
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await Promise.all([embed?.close(), qdrant?.close()]);
  });

  it('POST /search returns chunks of the requested collections only (and of each of them)', async () => {
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(requested, async (names) => {
        const res = await app.inject({
          method: 'POST',
          url: '/search',
          headers: AUTH,
          payload: { queries: ['apple banana tenant'], collection_names: names, k: 50 },
        });
        if (res.statusCode !== 200) {
          // The route may refuse a name outright (422, INVALID_REQUEST); it must never fail on one.
          expect(res.statusCode, res.body).toBe(422);
          expect(res.json()).toMatchObject({ code: 'INVALID_REQUEST' });
          return;
        }
        answered += 1;
        const { metadatas } = res.json() as { metadatas: { collection_name: string }[][] };
        const got = new Set(metadatas[0]!.map((m) => m.collection_name));
        for (const c of got) expect(names, `returned ${JSON.stringify(c)}`).toContain(c);
        const existing = names.filter((n) => stored.has(n));
        expect([...got].sort()).toEqual([...new Set(existing)].sort());
      }),
      { seed: settings.seed, numRuns: RUNS, endOnFailure: true },
    );
    expect(answered).toBeGreaterThan(0);
  });

  it('the index itself never crosses tenants: dense, lexical, hybrid, scroll and count', async () => {
    await fc.assert(
      fc.asyncProperty(requested, async (names) => {
        const filter = { collectionNames: names };
        const existing = [...new Set(names)].reduce((sum, n) => sum + (stored.get(n) ?? 0), 0);
        const query = 'apple banana tenant';
        const dense = hashEmbedding(`query: ${query}`, DIM);
        const sparse = { indices: [], values: [] };
        const hits = [
          ...(await index.searchDense(dense, filter, 50)),
          ...(await index.searchHybrid({ text: query, dense, sparse }, filter, 50)),
          ...(engine === 'lancedb' ? await index.searchLexical({ text: query }, filter, 50) : []),
          ...(await index.scroll(filter, { limit: 100 })).points,
        ];
        for (const h of hits)
          expect(names, `returned ${JSON.stringify(h.meta.collection_name)}`).toContain(
            h.meta.collection_name,
          );
        expect(await index.count(filter)).toBe(existing);
        // The bookkeeping tenants never answer to a name.
        for (const h of hits) expect(RESERVED_TENANT_VALUES).not.toContain(h.meta.collection_name);
      }),
      { seed: settings.seed, numRuns: RUNS, endOnFailure: true },
    );
  });
});
