import { describe, expect, it } from 'vitest';
import { createDenseEmbedder } from '../../src/embed/create-dense.js';
import { embeddingConfig, testLogger } from './setup.js';

const { log } = testLogger();
const create = (env: Record<string, string>) => createDenseEmbedder(embeddingConfig(env), { log });

describe('createDenseEmbedder configuration', () => {
  it('gives no embedder for EMBEDDING_PROVIDER=none or unset (lexical-only mode)', () => {
    expect(create({ EMBEDDING_PROVIDER: 'none' })).toBeUndefined();
    expect(create({})).toBeUndefined();
  });

  it('requires EMBEDDING_DIM for every real provider', () => {
    for (const provider of ['http-compat', 'inference-server', 'inprocess']) {
      expect(() =>
        create({ EMBEDDING_PROVIDER: provider, EMBEDDING_MODEL: 'm', EMBEDDING_API_BASE_URL: 'http://x/v1' }),
      ).toThrow(`EMBEDDING_DIM is required with EMBEDDING_PROVIDER=${provider}`);
    }
  });

  it('requires EMBEDDING_API_BASE_URL for the HTTP providers', () => {
    for (const provider of ['http-compat', 'inference-server']) {
      expect(() =>
        create({ EMBEDDING_PROVIDER: provider, EMBEDDING_MODEL: 'm', EMBEDDING_DIM: '4' }),
      ).toThrow(`EMBEDDING_API_BASE_URL is required with EMBEDDING_PROVIDER=${provider}`);
    }
  });

  it('requires EMBEDDING_MODEL for http-compat, where it is sent as `model`', () => {
    expect(() =>
      create({
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_API_BASE_URL: 'http://x/v1',
        EMBEDDING_DIM: '4',
      }),
    ).toThrow(/EMBEDDING_MODEL is required/);
  });

  it('refuses a prefix that leaves no room within EMBEDDING_MAX_TOKENS, naming the prefix variable', () => {
    expect(() =>
      create({
        EMBEDDING_PROVIDER: 'inference-server',
        EMBEDDING_API_BASE_URL: 'http://tei',
        EMBEDDING_DIM: '4',
        EMBEDDING_MAX_TOKENS: '8',
        EMBEDDING_PREFIX_QUERY: 'Given a web search query, retrieve relevant passages: ',
      }),
    ).toThrow(/^Configuration error: EMBEDDING_PREFIX_QUERY EMBEDDING_MAX_TOKENS=8 leaves no room/);
  });

  it('exposes provider, model and dim', () => {
    const e = create({
      EMBEDDING_PROVIDER: 'inference-server',
      EMBEDDING_MODEL: 'intfloat/multilingual-e5-large',
      EMBEDDING_API_BASE_URL: 'http://tei',
      EMBEDDING_DIM: '1024',
    });
    expect(e).toMatchObject({
      provider: 'inference-server',
      model: 'intfloat/multilingual-e5-large',
      dim: 1024,
    });
  });
});
