import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { retrieveSchema } from '../../src/config/retrieve.js';
import { createLanceIndex } from '../../src/index/lancedb.js';
import { type LanceCacheMb, lanceCacheUsage } from '../../src/index/lancedb-cache.js';
import { sessionFor } from '../../src/index/lancedb-session.js';
import { indexSettingsFrom } from '../../src/index/settings-from-config.js';
import { testConfig } from '../helpers/app.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { filePoints } from './file-points.js';

/**
 * LanceDB's session caches are bounded (src/index/lancedb-session.ts): every commit adds metadata
 * for its table version, and LanceDB's own 1 GiB default let a server that ingests steadily grow
 * by that much (docs/performance.md, "LanceDB's caches").
 */

const log = pino({ level: 'silent' });
const newDir = tempDirs('kilde-lance-session-');

/** A server's steady re-ingests: each round writes a file's new rows, drops its old ones and searches. */
async function churn(cacheMb: LanceCacheMb, rounds: number): Promise<number> {
  const dir = await newDir();
  const index = await createLanceIndex(
    { uri: dir, collection: 'files', sparse: true, timeoutMs: 10_000, cacheMb },
    { log },
    { optimizeEvery: 20, optimizeSpacing: 0 },
  );
  try {
    await index.ensureCollection();
    for (let i = 0; i < rounds; i++) {
      const file = `f${i % 10}`;
      await index.upsert(filePoints(file, `v${i}`, 3));
      await index.deleteWhere({ fileId: file, notIngestVersion: `v${i}` });
      await index.searchLexical({ text: `chunk ${i % 3}` }, { collectionNames: ['c'] }, 5);
    }
    expect(await index.count({ collectionNames: ['c'] })).toBe(30);
  } finally {
    await index.close();
  }
  return Number(sessionFor(cacheMb).sizeBytes());
}

describe('LanceDB session caches', () => {
  it('are bounded by LANCEDB_INDEX_CACHE_MB (unset: 512 with dense embeddings, 256 without) and LANCEDB_METADATA_CACHE_MB (64)', () => {
    const base = { EMBEDDING_PROVIDER: 'none' };
    expect(indexSettingsFrom(testConfig(retrieveSchema, base), false).cacheMb).toEqual({
      index: 256,
      metadata: 64,
    });
    const dense = {
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_DIM: '384',
      EMBEDDING_API_BASE_URL: 'http://127.0.0.1:9',
      EMBEDDING_MODEL: 'm',
    };
    expect(indexSettingsFrom(testConfig(retrieveSchema, dense), false).cacheMb).toEqual({
      index: 512,
      metadata: 64,
    });
    const set = indexSettingsFrom(
      testConfig(retrieveSchema, { ...base, LANCEDB_INDEX_CACHE_MB: '2048', LANCEDB_METADATA_CACHE_MB: '8' }),
      false,
    );
    expect(set.cacheMb).toEqual({ index: 2048, metadata: 8 });
    expect(() => testConfig(retrieveSchema, { ...base, LANCEDB_METADATA_CACHE_MB: '0' })).toThrow(
      /LANCEDB_METADATA_CACHE_MB/,
    );
  });

  it('is one session per process for the same bounds, shared by every index opened with them', () => {
    expect(sessionFor({ index: 3, metadata: 3 })).toBe(sessionFor({ index: 3, metadata: 3 }));
    expect(sessionFor({ index: 3, metadata: 3 })).not.toBe(sessionFor({ index: 3, metadata: 4 }));
  });

  it('stop growing with commits at their bound, where LanceDB would keep every version', async () => {
    const rounds = 150;
    const bounded = await churn({ index: 1, metadata: 1 }, rounds);
    const loose = await churn({ index: 1024, metadata: 1024 }, rounds);
    // 150 rounds (≥ 300 commits) cache several MiB of metadata when nothing bounds it ...
    expect(loose).toBeGreaterThan(4 * 1024 * 1024);
    // ... and stay within the 2 MiB the two caches may hold.
    expect(bounded).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(lanceCacheUsage().bytes).toBeGreaterThanOrEqual(bounded + loose - 1024 * 1024);
  }, 120_000);
});
