import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReranker } from '../../src/retrieve/rerank.js';
import { type FakeRerankServer, startFakeRerankServer } from '../fakes/rerank.js';

let server: FakeRerankServer;
beforeAll(async () => {
  server = await startFakeRerankServer();
});
afterAll(() => server.close());

describe('rerank client', () => {
  it('posts {model, query, documents, top_n} to {base}/v1/rerank with the bearer key', async () => {
    server.mode = { kind: 'ok' };
    const r = createReranker({ baseUrl: server.url, model: 'bge-reranker', apiKey: 'rk', timeoutMs: 2000 });
    const scores = await r.rerank('red apple', ['green pear', 'red apple pie', 'apple'], 2);
    expect(scores).toEqual([
      { index: 1, score: 1 },
      { index: 2, score: 0.5 },
    ]);
    const sent = server.requests.at(-1)!;
    expect(sent.path).toBe('/v1/rerank');
    expect(sent.headers.authorization).toBe('Bearer rk');
    expect(sent.json).toEqual({
      model: 'bge-reranker',
      query: 'red apple',
      documents: ['green pear', 'red apple pie', 'apple'],
      top_n: 2,
    });
  });

  it('keeps a /v1 base and sends no Authorization without a key', async () => {
    const r = createReranker({ baseUrl: `${server.url}/v1/`, model: 'm', apiKey: '', timeoutMs: 2000 });
    await r.rerank('q', ['q'], 1);
    expect(server.requests.at(-1)!.path).toBe('/v1/rerank');
    expect(server.requests.at(-1)!.headers.authorization).toBeUndefined();
  });

  it("accepts TEI's [{index, score}] answer", async () => {
    server.mode = { kind: 'ok', shape: 'tei' };
    const r = createReranker({ baseUrl: server.url, model: 'm', apiKey: '', timeoutMs: 2000 });
    expect(await r.rerank('blue sky', ['sky', 'blue sky'], 2)).toEqual([
      { index: 1, score: 1 },
      { index: 0, score: 0.5 },
    ]);
    server.mode = { kind: 'ok' };
  });

  it('throws on HTTP errors and time-outs (the pipeline falls back)', async () => {
    const r = createReranker({ baseUrl: server.url, model: 'm', apiKey: '', timeoutMs: 200 });
    server.mode = { kind: 'status', status: 503 };
    await expect(r.rerank('q', ['a'], 1)).rejects.toThrow(/HTTP 503/);
    server.mode = { kind: 'slow', delayMs: 1000 };
    await expect(r.rerank('q', ['a'], 1)).rejects.toThrow();
    server.mode = { kind: 'ok' };
  });
});
