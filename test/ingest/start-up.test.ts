import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { AUTH } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { eventually } from '../helpers/eventually.js';
import { multipartBody, startIngest } from './helpers/harness.js';

/** Qdrant starting after Kilde (compose, Kubernetes): connections are refused until `down` is false. */
let qdrant: QdrantFake;
let down = true;
const lateFetch: typeof fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  if (down && url.startsWith(qdrant.url)) {
    throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
  }
  return fetch(input, init);
};

const QDRANT_ENV = () => ({
  VECTORDB_URI: qdrant.url,
  EMBEDDING_PROVIDER: 'none',
  ENABLE_SPARSE_EMBEDDINGS: 'true',
  CHUNK_SPLIT_BY: 'word',
  CHUNK_SIZE: '50',
  CHUNK_OVERLAP: '0',
});

beforeAll(async () => {
  qdrant = await startQdrantFake();
});
afterAll(async () => {
  await qdrant?.close();
});

/** Lets the start-up retry run: the next back-off wait on the manual clock passes, then I/O settles. */
async function untilReady(
  h: { app: { inject: (o: { url: string }) => Promise<{ statusCode: number }> } },
  clock: ManualClock,
) {
  return eventually(async () => {
    if ((await h.app.inject({ url: '/health/ready' })).statusCode === 200) return true;
    // A back-off wait pending on the clock passes at once; the retry's own I/O then runs.
    if (clock.pending > 0) clock.advance(clock.nextDelay() ?? 0);
    return false;
  });
}

describe('start-up while the vector index is unreachable', () => {
  it('stays alive, answers 503 naming the index, and becomes ready once the index answers', async () => {
    down = true;
    const clock = new ManualClock();
    const h = await startIngest(QDRANT_ENV(), { fetch: lateFetch, clock });
    try {
      expect((await h.app.inject({ url: '/health' })).statusCode).toBe(200);
      const ready = await h.app.inject({ url: '/health/ready' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json().detail).toMatch(/waiting for the vector index: Qdrant .*fetch failed/);

      const { body, headers } = multipartBody(
        { file_id: 'late', collection_name: 'kb', user_id: 'u1' },
        { name: 'late.txt', content: 'Qdrant came up after the ingestion service did.' },
      );
      const early = await h.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      expect(early.statusCode).toBe(503);
      expect(early.json()).toMatchObject({ status: false, code: 'NOT_READY' });

      down = false;
      expect(await untilReady(h, clock)).toBe(true);
      const res = await h.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ status: true, chunks_count: 1 });
    } finally {
      await h.close();
    }
  });

  it('still fails start-up on a configuration error the index reports (incompatible collection)', async () => {
    down = false;
    // A collection written with dense vectors of another size.
    const first = await startIngest(
      {
        ...QDRANT_ENV(),
        VECTORDB_INDEX: 'other',
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_MODEL: 'm',
        EMBEDDING_DIM: '8',
        EMBEDDING_API_BASE_URL: 'http://127.0.0.1:1/v1',
      },
      { fetch: lateFetch },
    );
    await first.close();
    await expect(
      startIngest(
        {
          ...QDRANT_ENV(),
          VECTORDB_INDEX: 'other',
          EMBEDDING_PROVIDER: 'http-compat',
          EMBEDDING_MODEL: 'm',
          EMBEDDING_DIM: '16',
          EMBEDDING_API_BASE_URL: 'http://127.0.0.1:1/v1',
        },
        { fetch: lateFetch },
      ),
    ).rejects.toThrow(/size 8, but EMBEDDING_DIM is 16/);
  });
});
