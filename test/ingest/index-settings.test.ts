import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRecordedSettings } from '../../src/index/recorded-settings.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import { startIngest } from './helpers/harness.js';

/**
 * Settings recorded in the index (docs/operations.md, "Settings recorded in the index"): the first
 * process that sets KEEP_VERSIONS or embeds records it; a later one that leaves KEEP_VERSIONS unset
 * takes the index's, and one whose embedding contradicts the recorded one refuses to start, unless
 * INDEX_SETTINGS_UPDATE says to record its own.
 */
let embed: FakeEmbeddingsServer;
let dir: string;
const dense = (model: string) => ({
  EMBEDDING_PROVIDER: 'http-compat',
  EMBEDDING_API_BASE_URL: embed.baseUrl,
  EMBEDDING_MODEL: model,
  EMBEDDING_DIM: '16',
});

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
  dir = await mkdtemp(join(tmpdir(), 'kilde-index-settings-'));
});
afterAll(async () => {
  await embed?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('settings recorded in the index', () => {
  it("records KEEP_VERSIONS and the embedding; a process without KEEP_VERSIONS takes the index's", async () => {
    const first = await startIngest({ ...dense('model-a'), KEEP_VERSIONS: '2' }, { dataDir: dir });
    expect(await readRecordedSettings(first.index)).toMatchObject({
      keep_versions: 2,
      embedding: { model: 'model-a', dim: 16 },
    });
    await first.close();
    const second = await startIngest(dense('model-a'), { dataDir: dir });
    try {
      expect(second.part.pipeline().service.keepVersions).toBe(2);
      const info = await second.app.inject({ method: 'GET', url: '/api/v1/info', headers: AUTH });
      expect(info.json()).toMatchObject({ keep_versions: 2 });
    } finally {
      await second.close();
    }
  });

  it('refuses to start with another embedding model, unless told to record it', async () => {
    const refused = async (env: Record<string, string>) => {
      const h = await startIngest(env, { dataDir: dir, start: false });
      try {
        return await h.part.start?.().then(
          () => undefined,
          (err: unknown) => err,
        );
      } finally {
        await h.close();
      }
    };
    expect(await refused(dense('model-b'))).toMatchObject({
      code: 'INDEX_SETTINGS_CONFLICT',
      message: expect.stringContaining('model-a (16 dimensions)'),
    });
    expect(await refused({ ...dense('model-a'), KEEP_VERSIONS: '0' })).toMatchObject({
      code: 'INDEX_SETTINGS_CONFLICT',
      message: expect.stringContaining('KEEP_VERSIONS=0 contradicts the index'),
    });
    const updated = await startIngest(
      { ...dense('model-b'), INDEX_SETTINGS_UPDATE: 'true' },
      { dataDir: dir },
    );
    try {
      expect(await readRecordedSettings(updated.index)).toMatchObject({
        keep_versions: 2,
        embedding: { model: 'model-b', dim: 16 },
      });
    } finally {
      await updated.close();
    }
  });

  it('takes a model folder that moved as the same model, and another folder as another', async () => {
    const moved = await mkdtemp(join(tmpdir(), 'kilde-index-moved-'));
    const start = (model: string) => startIngest(dense(model), { dataDir: moved, start: false });
    try {
      const first = await startIngest(dense('/home/a/.kilde/models/all-minilm-l6-v2'), { dataDir: moved });
      await first.close();
      const same = await start('/srv/kilde/models/all-minilm-l6-v2');
      try {
        await same.part.start?.();
      } finally {
        await same.close();
      }
      const other = await start('/srv/kilde/models/bge-small');
      try {
        await expect(other.part.start?.()).rejects.toMatchObject({
          code: 'INDEX_SETTINGS_CONFLICT',
        });
      } finally {
        await other.close();
      }
    } finally {
      await rm(moved, { recursive: true, force: true });
    }
  });
});
