import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../../src/chunk/approx-counter.js';
import { createDenseEmbedder } from '../../src/embed/create-dense.js';
import type { DenseEmbedder } from '../../src/embed/dense.js';
import { KildeError } from '../../src/errors.js';
import { hashEmbedding } from '../fakes/hash-embedding.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { ManualClock } from '../helpers/clock.js';
import { embeddingConfig, FAST_BACKOFF, testLogger } from './setup.js';

const DIM = 8;
let fake: FakeEmbeddingsServer;

/** A vector as it arrives with `encoding_format: base64` (the default): float32 values. */
const onWire = (text: string) => Array.from(Float32Array.from(hashEmbedding(text, DIM)));

beforeAll(async () => {
  fake = await startFakeOpenAIEmbeddings({ dim: DIM });
});
afterAll(() => fake.close());
afterEach(() => fake.reset());

function embedder(
  env: Record<string, string> = {},
  backoff = FAST_BACKOFF,
  clock = new ManualClock({ autoSleep: true }),
) {
  const { log, logs } = testLogger();
  const e = createDenseEmbedder(
    embeddingConfig({
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_MODEL: 'intfloat/multilingual-e5-large',
      EMBEDDING_API_BASE_URL: fake.baseUrl,
      EMBEDDING_API_KEY: 'sk-test',
      EMBEDDING_DIM: String(DIM),
      ...env,
    }),
    { log, backoff, clock },
  );
  if (e === undefined) throw new Error('expected an embedder');
  return { e, logs, clock };
}

async function failure(p: Promise<unknown>): Promise<KildeError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KildeError);
  return err as KildeError;
}

describe('http-compat embedder on the wire', () => {
  it('POSTs {model, input} to {base}/embeddings keeping /v1, with the bearer key, and returns the vectors in order', async () => {
    const { e } = embedder();
    const vectors = await e.embedDocuments(['Første afsnit.', 'second chunk']);

    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0];
    expect(req?.method).toBe('POST');
    expect(req?.path).toBe('/v1/embeddings');
    expect(req?.headers.authorization).toBe('Bearer sk-test');
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.body).toBe(
      '{"model":"intfloat/multilingual-e5-large","input":["passage: Første afsnit.","passage: second chunk"],"encoding_format":"base64"}',
    );
    expect(vectors).toEqual([onWire('passage: Første afsnit.'), onWire('passage: second chunk')]);
  });

  it('with EMBEDDING_ENCODING_FORMAT=float sends the plain {model, input} and reads JSON numbers', async () => {
    const { e } = embedder({ EMBEDDING_ENCODING_FORMAT: 'float' });
    const v = await e.embedQuery('tal');
    expect(fake.requests[0]?.body).toBe('{"model":"intfloat/multilingual-e5-large","input":["query: tal"]}');
    expect(v).toEqual(hashEmbedding('query: tal', DIM));
  });

  it('reads numbers from an endpoint that ignores encoding_format', async () => {
    fake.faults = [
      {
        kind: 'status',
        status: 200,
        body: {
          object: 'list',
          data: [{ object: 'embedding', index: 0, embedding: hashEmbedding('a', DIM) }],
        },
      },
    ];
    const { e } = embedder();
    expect(await e.embedQuery('a')).toEqual(hashEmbedding('a', DIM));
  });

  it('refuses a base64 embedding that is not whole float32 values', async () => {
    const { e } = embedder({ EMBEDDING_MAX_RETRIES: '0' });
    for (const embedding of ['not base64!', 'AAAAAA==', Buffer.from('abcdef').toString('base64')]) {
      fake.faults = [
        { kind: 'status', status: 200, body: { object: 'list', data: [{ index: 0, embedding }] } },
      ];
      const err = await failure(e.embedQuery('a'));
      expect(err.code).toBe('EMBEDDING_FAILED');
      expect(err.message).toMatch(
        embedding === 'AAAAAA=='
          ? /1 dimensions but EMBEDDING_DIM is 8/
          : /not base64 float32 values \(data\[0\]\.embedding\)/,
      );
    }
  });

  it('keeps a base URL path with a trailing slash and sends no Authorization without a key', async () => {
    const { e } = embedder({ EMBEDDING_API_BASE_URL: `${fake.baseUrl}/`, EMBEDDING_API_KEY: '' });
    await e.embedQuery('x');
    expect(fake.requests[0]?.path).toBe('/v1/embeddings');
    expect(fake.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('applies the query prefix to queries and the document prefix to chunks, trailing spaces and all', async () => {
    const { e } = embedder({ EMBEDDING_PREFIX_QUERY: 'Represent this question: ', EMBEDDING_PREFIX_DOC: '' });
    const q = await e.embedQuery('hvad er grundloven?');
    await e.embedDocuments(['grundloven er ...']);
    expect(fake.inputs()).toEqual(['Represent this question: hvad er grundloven?', 'grundloven er ...']);
    expect(q).toEqual(onWire('Represent this question: hvad er grundloven?'));
  });

  it('sends at most EMBEDDING_BATCH_SIZE texts per request and reassembles them in input order', async () => {
    const { e } = embedder({ EMBEDDING_BATCH_SIZE: '2' });
    const texts = ['a', 'b', 'c', 'd', 'e'];
    const vectors = await e.embedDocuments(texts);
    expect(fake.embeddingRequests().map((r) => (r.json as { input: string[] }).input)).toEqual([
      ['passage: a', 'passage: b'],
      ['passage: c', 'passage: d'],
      ['passage: e'],
    ]);
    expect(vectors).toEqual(texts.map((t) => onWire(`passage: ${t}`)));
  });

  it('orders the answer by data[].index, not by position', async () => {
    fake.reverse = true;
    const { e } = embedder();
    const vectors = await e.embedDocuments(['alpha', 'beta', 'gamma']);
    expect(vectors).toEqual(['alpha', 'beta', 'gamma'].map((t) => onWire(`passage: ${t}`)));
  });

  it('embeds nothing (and sends nothing) for an empty list', async () => {
    const { e } = embedder();
    expect(await e.embedDocuments([])).toEqual([]);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('http-compat retries', () => {
  it('retries 503 and 429, waiting the Retry-After seconds, then succeeds', async () => {
    fake.faults = [
      { kind: 'status', status: 503 },
      { kind: 'status', status: 429, retryAfter: '1', body: { error: { message: 'Rate limit reached' } } },
    ];
    const { e, logs, clock } = embedder();
    const v = await e.embedQuery('retry me');
    expect(clock.slept[1]).toBe(1000);
    expect(fake.embeddingRequests()).toHaveLength(3);
    expect(v).toEqual(onWire('query: retry me'));
    const retries = logs.lines.filter((l) => l.msg === 'embedding request failed; retrying');
    expect(retries.map((l) => l.failure)).toEqual(['HTTP 503', 'HTTP 429']);
    expect(retries[1]?.delayMs).toBe(1000);
  });

  it('honours a Retry-After HTTP date, capped at the maximum wait', async () => {
    fake.faults = [
      { kind: 'status', status: 429, retryAfter: new Date(Date.UTC(2026, 0, 1, 1)).toUTCString() },
    ];
    const clock = new ManualClock({ start: Date.UTC(2026, 0, 1), autoSleep: true });
    const { e, logs } = embedder({}, { baseDelayMs: 10, maxDelayMs: 300 }, clock);
    await e.embedQuery('capped');
    expect(clock.slept).toEqual([300]);
    expect(logs.lines.find((l) => l.msg === 'embedding request failed; retrying')?.delayMs).toBe(300);
  });

  it('retries a dropped connection', async () => {
    fake.faults = [{ kind: 'hang-up' }];
    const { e } = embedder();
    expect(await e.embedQuery('again')).toEqual(onWire('query: again'));
    expect(fake.embeddingRequests()).toHaveLength(2);
  });

  it('gives up after EMBEDDING_MAX_RETRIES with EMBEDDING_FAILED naming the status', async () => {
    fake.always = { kind: 'status', status: 502 };
    const { e } = embedder({ EMBEDDING_MAX_RETRIES: '2' });
    const err = await failure(e.embedDocuments(['x']));
    expect(err.code).toBe('EMBEDDING_FAILED');
    expect(err.statusCode).toBe(502);
    expect(err.message).toContain('HTTP 502 after 3 attempts');
    expect(fake.embeddingRequests()).toHaveLength(3);
  });

  it('does not retry a 400 and reports the upstream message as detail', async () => {
    fake.faults = [
      {
        kind: 'status',
        status: 400,
        body: { error: { message: 'bad model', type: 'invalid_request_error' } },
      },
    ];
    const { e } = embedder();
    const err = await failure(e.embedDocuments(['x']));
    expect(err.message).toContain('HTTP 400');
    expect(err.detail).toContain('bad model');
    expect(fake.embeddingRequests()).toHaveLength(1);
  });

  it('does not retry a 401 either', async () => {
    fake.faults = [{ kind: 'status', status: 401 }];
    const { e } = embedder();
    await failure(e.embedQuery('x'));
    expect(fake.embeddingRequests()).toHaveLength(1);
  });

  it('times out a silent endpoint after EMBEDDING_TIMEOUT', async () => {
    fake.faults = [{ kind: 'slow', delayMs: 3_000 }];
    const { e, clock } = embedder({ EMBEDDING_TIMEOUT: '1', EMBEDDING_MAX_RETRIES: '0' });
    const pending = failure(e.embedQuery('slow'));
    // Once the request is on the wire, one second passes on the embedder's clock.
    while (fake.embeddingRequests().length === 0) await new Promise((r) => setImmediate(r));
    clock.advance(1000);
    const err = await pending;
    expect(err.message).toContain('no answer within 1 s');
  });

  it("stops retrying as soon as the caller's signal aborts", async () => {
    fake.always = { kind: 'status', status: 429, retryAfter: '30' };
    const clock = new ManualClock();
    const { e } = embedder({ EMBEDDING_MAX_RETRIES: '5' }, FAST_BACKOFF, clock);
    const ctl = new AbortController();
    const pending = e.embedQuery('cancel me', ctl.signal);
    // The first 429 asks for 30 s (capped at FAST_BACKOFF's 5 s); abort during that wait.
    while (clock.slept.length === 0) await new Promise((r) => setImmediate(r));
    ctl.abort(new Error('client went away'));
    await expect(pending).rejects.toThrow('client went away');
    expect(clock.slept).toEqual([5_000]);
    expect(fake.embeddingRequests()).toHaveLength(1);
  });
});

describe('http-compat answers that are wrong', () => {
  it('rejects a vector whose size is not EMBEDDING_DIM, naming both numbers', async () => {
    fake.faults = [{ kind: 'wrong-dim', dim: 5 }];
    const { e } = embedder();
    const err = await failure(e.embedDocuments(['x']));
    expect(err.code).toBe('EMBEDDING_FAILED');
    expect(err.message).toMatch(/vector of 5 dimensions but EMBEDDING_DIM is 8/);
  });

  it('rejects malformed JSON and an answer with fewer embeddings than inputs', async () => {
    fake.faults = [
      { kind: 'malformed' },
      {
        kind: 'status',
        status: 200,
        body: { object: 'list', data: [{ index: 0, embedding: hashEmbedding('a', DIM) }] },
      },
    ];
    const { e } = embedder({ EMBEDDING_MAX_RETRIES: '0' });
    expect((await failure(e.embedDocuments(['a', 'b']))).message).toContain('malformed JSON');
    expect((await failure(e.embedDocuments(['a', 'b']))).message).toContain(
      '1 embeddings (indexes 0) for 2 inputs',
    );
  });

  it('rejects an answer that is not an embeddings list', async () => {
    fake.faults = [{ kind: 'status', status: 200, body: { embeddings: [[0.1]] } }];
    const { e } = embedder();
    expect((await failure(e.embedQuery('a'))).message).toContain('not an OpenAI embeddings list');
  });
});

describe('http-compat readiness probe', () => {
  it('embeds one short text and checks its size', async () => {
    const { e } = embedder();
    await e.probe?.(AbortSignal.timeout(2_000));
    expect(fake.inputs()).toEqual(['ping']);
  });

  it('fails on a wrong dimension, naming both numbers', async () => {
    fake.faults = [{ kind: 'wrong-dim', dim: 1024 }];
    const { e } = embedder();
    await expect(e.probe?.(AbortSignal.timeout(2_000))).rejects.toThrow(
      /1024 dimensions but EMBEDDING_DIM is 8/,
    );
  });

  it('does not retry: one failed request fails the probe', async () => {
    fake.always = { kind: 'status', status: 503 };
    const { e } = embedder();
    await expect(e.probe?.(AbortSignal.timeout(2_000))).rejects.toThrow(/HTTP 503/);
    expect(fake.embeddingRequests()).toHaveLength(1);
  });
});

describe('http-compat long inputs', () => {
  const long = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');

  it('splits an input over EMBEDDING_MAX_TOKENS into windows, sends every word, and pools them', async () => {
    const { e, logs } = embedder({ EMBEDDING_MAX_TOKENS: '40', EMBEDDING_BATCH_SIZE: '3' });
    const [short, pooled] = (await e.embedDocuments(['short one', long])) as [number[], number[]];

    const inputs = fake.inputs();
    expect(inputs[0]).toBe('passage: short one');
    const windows = inputs.slice(1);
    expect(windows.length).toBeGreaterThan(1);
    // every window carries the prefix, and together they carry every word, in order, once
    expect(windows.every((w) => w.startsWith('passage: '))).toBe(true);
    expect(windows.map((w) => w.slice('passage: '.length)).join(' ')).toBe(long);
    expect(
      Math.max(...fake.embeddingRequests().map((r) => (r.json as { input: string[] }).input.length)),
    ).toBe(3);

    expect(short).toEqual(onWire('passage: short one'));
    // the token-weighted mean of the window vectors, re-normalised
    const sum = new Array<number>(DIM).fill(0);
    for (const w of windows) {
      const weight = approximateTokenCounter().count(w.slice('passage: '.length));
      onWire(w).forEach((x, d) => {
        sum[d] = (sum[d] ?? 0) + weight * x;
      });
    }
    const norm = Math.hypot(...sum);
    expect(pooled).toHaveLength(DIM);
    // float32 windows (base64 on the wire): equal to float32 precision
    for (const [d, x] of pooled.entries()) expect(x).toBeCloseTo((sum[d] ?? 0) / norm, 7);
    expect(logs.lines.some((l) => String(l.msg).includes('longer than EMBEDDING_MAX_TOKENS'))).toBe(true);
  });

  it('uses the injected token counter to size the windows', async () => {
    const { log } = testLogger();
    // a counter where every character is a token: 26-token budget minus prefix (0) and 2 specials
    const counter = {
      count: (t: string) => t.length,
      offsets: (t: string) => [...t].map((_, i): [number, number] => [i, i + 1]),
    };
    const e = createDenseEmbedder(
      embeddingConfig({
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_MODEL: 'm',
        EMBEDDING_API_BASE_URL: fake.baseUrl,
        EMBEDDING_DIM: String(DIM),
        EMBEDDING_PREFIX_DOC: '',
        EMBEDDING_MAX_TOKENS: '12',
      }),
      { log, counter },
    ) as DenseEmbedder;
    await e.embedDocuments(['abcdefghijklmnopqrstuvwxyz']);
    expect(fake.inputs()).toEqual(['abcdefghij', 'klmnopqrst', 'uvwxyz']);
  });
});
