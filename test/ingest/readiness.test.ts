import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { type Harness, startIngest } from './helpers/harness.js';

/** The ingest side's readiness tells the truth too: a collection it cannot write to is not ready. */
let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let h: Harness;

beforeAll(async () => {
  qdrant = await startQdrantFake();
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
  h = await startIngest({
    VECTORDB_URI: qdrant.url,
    VECTORDB_INDEX: 'docs',
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '16',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
  });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([qdrant?.close(), embed?.close()]);
});

describe('ingest readiness', () => {
  it('is 503 naming the mismatch when the collection was recreated with another dense size', async () => {
    expect((await h.app.inject({ url: '/health/ready' })).statusCode).toBe(200);
    const call = (method: string, body?: unknown) =>
      fetch(`${qdrant.url}/collections/docs`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    expect((await call('DELETE')).status).toBe(200);
    expect((await call('PUT', { vectors: { 'text-dense': { size: 8, distance: 'Cosine' } } })).status).toBe(
      200,
    );
    const ready = await h.app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().detail).toMatch(
      /index: collection "docs" stores text-dense of size 8 but EMBEDDING_DIM=16: every ingest would fail; set EMBEDDING_DIM=8/,
    );
  });
});
