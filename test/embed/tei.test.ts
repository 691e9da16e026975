import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDenseEmbedder } from '../../src/embed/create-dense.js';
import type { DenseEmbedder } from '../../src/embed/dense.js';
import { KildeError } from '../../src/errors.js';
import { hashEmbedding, words } from '../fakes/hash-embedding.js';
import { type FakeTeiServer, startFakeTei, teiError } from '../fakes/tei.js';
import { embeddingConfig, FAST_BACKOFF, testLogger } from './setup.js';

const DIM = 16;
let tei: FakeTeiServer;

beforeAll(async () => {
  // a server that takes 4 inputs per request and 30 tokens (words + punctuation + 2) per input
  tei = await startFakeTei({ dim: DIM, maxClientBatchSize: 4, maxInputLength: 30 });
});
afterAll(() => tei.close());
afterEach(() => tei.reset());

function embedder(env: Record<string, string> = {}) {
  const { log, logs } = testLogger();
  const e = createDenseEmbedder(
    embeddingConfig({
      EMBEDDING_PROVIDER: 'inference-server',
      EMBEDDING_API_BASE_URL: tei.url,
      EMBEDDING_DIM: String(DIM),
      ...env,
    }),
    { log, backoff: FAST_BACKOFF },
  ) as DenseEmbedder;
  return { e, logs };
}

describe('inference-server (TEI) embedder', () => {
  it('POSTs {inputs, truncate: false, normalize: true} to {base}/embed, with the bearer key when set', async () => {
    const { e } = embedder({ EMBEDDING_API_KEY: 'tei-secret' });
    const vectors = await e.embedDocuments(['one', 'two']);
    const req = tei.embedRequests()[0];
    expect(tei.embedRequests()).toHaveLength(1);
    expect(req?.path).toBe('/embed');
    expect(req?.headers.authorization).toBe('Bearer tei-secret');
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.body).toBe('{"inputs":["passage: one","passage: two"],"truncate":false,"normalize":true}');
    expect(vectors).toEqual([hashEmbedding('passage: one', DIM), hashEmbedding('passage: two', DIM)]);
  });

  it('sends no Authorization header without a key and applies the query prefix', async () => {
    const { e } = embedder();
    expect(await e.embedQuery('hvem er statsminister?')).toEqual(
      hashEmbedding('query: hvem er statsminister?', DIM),
    );
    expect(tei.embedRequests()[0]?.headers.authorization).toBeUndefined();
  });

  it('halves a batch TEI refuses with 413 (over --max-client-batch-size) and keeps every input in order', async () => {
    const { e, logs } = embedder({ EMBEDDING_BATCH_SIZE: '10' });
    const texts = Array.from({ length: 10 }, (_, i) => `text ${i}`);
    const vectors = await e.embedDocuments(texts);
    expect(vectors).toEqual(texts.map((t) => hashEmbedding(`passage: ${t}`, DIM)));
    expect(tei.embedded()).toEqual(texts.map((t) => `passage: ${t}`));
    const sizes = tei.embedRequests().map((r) => (r.json as { inputs: string[] }).inputs.length);
    expect(sizes).toEqual([10, 5, 3, 2, 5, 3, 2]);
    expect(logs.lines.some((l) => l.msg === 'TEI refused a batch for its size; halving it')).toBe(true);
  });

  it('splits an input TEI refuses as too long (413) instead of dropping or truncating it', async () => {
    // EMBEDDING_MAX_TOKENS trusts the model with 200 tokens, but this server stops at 30
    const { e, logs } = embedder({ EMBEDDING_MAX_TOKENS: '200' });
    const long = Array.from({ length: 70 }, (_, i) => `w${i}`).join(' ');
    const [short, pooled] = (await e.embedDocuments(['kort tekst', long])) as [number[], number[]];

    expect(short).toEqual(hashEmbedding('passage: kort tekst', DIM));
    expect(Math.hypot(...pooled)).toBeCloseTo(1, 10);
    // every word of the long input reached the model exactly once; nothing was truncated
    const seen = tei
      .embedded()
      .filter((t) => t !== 'passage: kort tekst')
      .flatMap((t) => words(t.slice('passage: '.length)));
    expect(seen).toEqual(words(long));
    expect(tei.embedRequests().every((r) => (r.json as { truncate: boolean }).truncate === false)).toBe(true);
    expect(logs.lines.some((l) => String(l.msg).includes('refused an input as too long'))).toBe(true);
  });

  it('retries 429 "Model is overloaded" honouring Retry-After', async () => {
    tei.faults = [{ kind: 'status', status: 429, retryAfter: '0' }];
    const { e } = embedder();
    expect(await e.embedQuery('busy')).toEqual(hashEmbedding('query: busy', DIM));
    expect(tei.embedRequests()).toHaveLength(2);
  });

  it('fails on 424 (backend error) at once, with TEI’s error as detail', async () => {
    tei.faults = [{ kind: 'status', status: 424, body: teiError('Inference failed', 'backend') }];
    const { e } = embedder();
    const err = await e.embedQuery('x').catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KildeError);
    expect((err as KildeError).code).toBe('EMBEDDING_FAILED');
    expect((err as KildeError).message).toContain('TEI answered HTTP 424');
    expect((err as KildeError).detail).toBe('backend: Inference failed');
    expect(tei.embedRequests()).toHaveLength(1);
  });

  it('does not split for a 422 tokenizer error that is not about length', async () => {
    tei.faults = [{ kind: 'status', status: 422, body: teiError('invalid UTF-8 sequence', 'tokenizer') }];
    const { e } = embedder();
    await expect(e.embedQuery('x')).rejects.toThrow(/TEI answered HTTP 422/);
    expect(tei.embedRequests()).toHaveLength(1);
  });

  it('rejects vectors of the wrong size, naming both numbers', async () => {
    tei.faults = [{ kind: 'wrong-dim', dim: 384 }];
    const { e } = embedder();
    await expect(e.embedDocuments(['x'])).rejects.toThrow(/384 dimensions but EMBEDDING_DIM is 16/);
  });

  it('probes with one tiny /embed request', async () => {
    const { e } = embedder();
    await e.probe?.(AbortSignal.timeout(2_000));
    expect(tei.embedded()).toEqual(['ping']);
    tei.faults = [{ kind: 'status', status: 503, body: teiError('unhealthy', 'unhealthy') }];
    await expect(e.probe?.(AbortSignal.timeout(2_000))).rejects.toThrow(/HTTP 503/);
  });
});
