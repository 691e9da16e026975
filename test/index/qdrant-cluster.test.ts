import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestSchema } from '../../src/config/ingest.js';
import { type IndexPoint, pointId } from '../../src/index/contract.js';
import { createQdrantIndex } from '../../src/index/qdrant.js';
import { indexSettingsFrom } from '../../src/index/settings-from-config.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { logSink, testConfig } from '../helpers/app.js';
import { openQdrant, uniqueCollection } from './qdrant-target.js';

/**
 * Qdrant's distributed mode (issue 14, docs/scaling.md): the collection is created with the
 * configured shards, replicas and write consistency; writes carry the configured ordering and reads
 * the configured consistency. Every request is checked against Qdrant's OpenAPI document by the fake.
 */
let fake: QdrantFake;
const target = () => ({ url: fake.url, violations: () => fake.violations });

beforeAll(async () => {
  fake = await startQdrantFake();
});
afterAll(async () => {
  await fake?.close();
});

function point(fileId: string, i: number): IndexPoint {
  return {
    id: pointId(fileId, 'v1', i),
    content: `heron ${i}`,
    meta: {
      collection_name: 'c',
      collection_type: 'knowledge',
      file_id: fileId,
      ingest_version: 'v1',
      split_id: i,
    },
    sparse: { indices: [1, 2], values: [0.5, 0.5] },
  };
}

const requestsTo = (collection: string) => fake.requests.filter((r) => r.path.includes(`/${collection}`));

describe('Qdrant cluster settings', () => {
  it('defaults: the create body and every request are what a single node got before', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), { collection });
    await index.ensureCollection();
    await index.upsert([point('a', 0)]);
    expect(await index.count({ fileId: 'a' })).toBe(1);
    await index.deleteWhere({ fileId: 'a' });
    const create = requestsTo(collection).find(
      (r) => r.method === 'PUT' && r.operationId === 'create_collection',
    );
    expect(create?.body).not.toHaveProperty('shard_number');
    expect(create?.body).not.toHaveProperty('replication_factor');
    expect(create?.body).not.toHaveProperty('write_consistency_factor');
    for (const r of requestsTo(collection)) {
      expect(r.query).not.toMatch(/ordering|consistency/);
    }
    expect(fake.violations).toEqual([]);
  });

  it('creates a sharded, replicated collection; writes name their ordering, reads their consistency', async () => {
    const collection = uniqueCollection();
    const index = openQdrant(target(), {
      collection,
      cluster: {
        shardNumber: 6,
        replicationFactor: 3,
        writeConsistencyFactor: 2,
        writeOrdering: 'strong',
        readConsistency: 'majority',
      },
    });
    await index.ensureCollection();
    await index.upsert([point('b', 0), point('b', 1)]);
    expect(await index.count({ fileId: 'b' })).toBe(2);
    expect((await index.scroll({ fileId: 'b' }, { limit: 10 })).points).toHaveLength(2);
    expect(
      await index.searchLexical({ text: 'heron', sparse: { indices: [1], values: [1] } }, {}, 5),
    ).not.toEqual([]);
    expect(await index.deleteWhere({ fileId: 'b' })).toBe(2);

    const sent = requestsTo(collection);
    const create = sent.find((r) => r.operationId === 'create_collection');
    expect(create?.body).toMatchObject({
      shard_number: 6,
      replication_factor: 3,
      write_consistency_factor: 2,
    });
    const info = fake.memory.info(collection);
    expect(info.config.params).toMatchObject({
      shard_number: 6,
      replication_factor: 3,
      write_consistency_factor: 2,
    });

    const writes = sent.filter((r) =>
      ['upsert_points', 'batch_update', 'delete_points', 'create_field_index'].includes(r.operationId ?? ''),
    );
    const reads = sent.filter((r) =>
      ['count_points', 'scroll_points', 'query_points'].includes(r.operationId ?? ''),
    );
    expect(writes.length).toBeGreaterThan(0);
    expect(reads.length).toBeGreaterThan(0);
    for (const w of writes) expect(new URLSearchParams(w.query).get('ordering')).toBe('strong');
    for (const w of writes) expect(new URLSearchParams(w.query).get('wait')).toBe('true');
    for (const r of reads) expect(new URLSearchParams(r.query).get('consistency')).toBe('majority');
    expect(fake.violations).toEqual([]);
  });

  it('an existing collection with another layout is used as it is, with a warning naming both', async () => {
    const collection = uniqueCollection();
    await openQdrant(target(), { collection }).ensureCollection();
    const logs = logSink();
    const index = createQdrantIndex(
      { uri: fake.url, collection, sparse: true, timeoutMs: 10_000, cluster: { replicationFactor: 3 } },
      { log: pino({ level: 'warn' }, logs.stream) },
    );
    await index.ensureCollection();
    expect(logs.text()).toMatch(/replication_factor 1, but QDRANT_REPLICATION_FACTOR is 3/);
  });

  it('the variables reach the index settings; bad values are refused when the configuration is read', () => {
    const base = {
      EMBEDDING_PROVIDER: 'none',
      VECTORDB_URI: 'http://qdrant:6333',
      ENABLE_SPARSE_EMBEDDINGS: 'true',
    };
    const config = testConfig(ingestSchema, {
      ...base,
      QDRANT_SHARD_NUMBER: '4',
      QDRANT_REPLICATION_FACTOR: '2',
      QDRANT_WRITE_CONSISTENCY_FACTOR: '2',
      QDRANT_WRITE_ORDERING: 'strong',
      QDRANT_READ_CONSISTENCY: 'all',
    });
    expect(indexSettingsFrom(config, true).cluster).toEqual({
      shardNumber: 4,
      replicationFactor: 2,
      writeConsistencyFactor: 2,
      writeOrdering: 'strong',
      readConsistency: 'all',
    });
    expect(indexSettingsFrom(testConfig(ingestSchema, base), true).cluster).toEqual({});
    expect(() => testConfig(ingestSchema, { ...base, QDRANT_READ_CONSISTENCY: 'most' })).toThrow(
      /QDRANT_READ_CONSISTENCY/,
    );
    expect(() => testConfig(ingestSchema, { ...base, QDRANT_WRITE_ORDERING: 'fast' })).toThrow(
      /QDRANT_WRITE_ORDERING/,
    );
    expect(() => testConfig(ingestSchema, { ...base, QDRANT_REPLICATION_FACTOR: '0' })).toThrow(
      /QDRANT_REPLICATION_FACTOR/,
    );
  });
});
