import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@anush008/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDenseEmbedder } from '../../src/embed/create-dense.js';
import type { DenseEmbedder } from '../../src/embed/dense.js';
import { locateModel } from '../../src/embed/inprocess.js';
import { embeddingConfig, testLogger } from './setup.js';
import { SHARED_TOKENIZER, TINY_DIM, tableRow, writeTinyModel } from './tiny-onnx-model.js';

let dir: string;
let modelDir: string;
const closers: DenseEmbedder[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kilde-inprocess-'));
  modelDir = join(dir, 'tiny-model');
  writeTinyModel(modelDir);
});
afterAll(async () => {
  for (const e of closers) await e.close?.();
  rmSync(dir, { recursive: true, force: true });
});

function embedder(env: Record<string, string> = {}) {
  const { log, logs } = testLogger();
  const e = createDenseEmbedder(
    embeddingConfig({
      EMBEDDING_PROVIDER: 'inprocess',
      EMBEDDING_MODEL: modelDir,
      EMBEDDING_DIM: String(TINY_DIM),
      ...env,
    }),
    { log },
  ) as DenseEmbedder;
  closers.push(e);
  return { e, logs };
}

/** What the tiny model must give: the mean of its table rows over the tokens, L2-normalised. */
async function expected(text: string): Promise<number[]> {
  const encoding = await Tokenizer.fromFile(SHARED_TOKENIZER).encode(text, null, { addSpecialTokens: true });
  const ids = encoding.getIds();
  const sum = new Array<number>(TINY_DIM).fill(0);
  for (const id of ids) {
    for (const [d, x] of tableRow(id).entries()) sum[d] = (sum[d] ?? 0) + x / ids.length;
  }
  const norm = Math.hypot(...sum);
  return sum.map((x) => x / norm);
}

function expectClose(actual: number[] | undefined, wanted: number[]) {
  expect(actual).toHaveLength(wanted.length);
  for (const [d, x] of wanted.entries()) expect(actual?.[d]).toBeCloseTo(x, 5);
}

describe('inprocess embedder (transformers.js + ONNX Runtime, offline)', () => {
  it('runs a real ONNX model from a local directory: mean pooling over the mask, normalised, prefixes applied', async () => {
    const { e, logs } = embedder();
    // texts of different lengths share a padded batch: the attention mask must keep padding out
    const docs = ['Grundloven blev vedtaget i 1849.', 'kort'];
    const vectors = await e.embedDocuments(docs);
    expectClose(vectors[0], await expected(`passage: ${docs[0]}`));
    expectClose(vectors[1], await expected('passage: kort'));
    expectClose(await e.embedQuery('hvornår?'), await expected('query: hvornår?'));
    expect(logs.lines.some((l) => l.msg === 'in-process embedding model loaded')).toBe(true);
  });

  it('splits an input the model’s own tokenizer finds too long, though the estimate said it fits', async () => {
    // the fallback estimate counts 2 tokens per "x1y2z3w4", WordPiece about 8: 20 vs ~80 tokens
    const { e, logs } = embedder({ EMBEDDING_MAX_TOKENS: '24', EMBEDDING_PREFIX_DOC: '' });
    const text = 'x1y2z3w4 '.repeat(10).trim();
    const [v] = await e.embedDocuments([text]);
    expect(v).toHaveLength(TINY_DIM);
    expect(Math.hypot(...(v ?? []))).toBeCloseTo(1, 5);
    const refusals = logs.lines.filter((l) => String(l.msg).includes('refused an input as too long'));
    expect(refusals.length).toBeGreaterThan(0);
    expect(String(refusals[0]?.reason)).toMatch(/tokens, the model takes at most 24/);
  });

  it('probes by loading the model and embedding one text', async () => {
    const { e } = embedder();
    await expect(e.probe?.(AbortSignal.timeout(30_000))).resolves.toBeUndefined();
  });

  it('rejects a model whose vectors are not EMBEDDING_DIM long, naming both numbers', async () => {
    const { e } = embedder({ EMBEDDING_DIM: '384' });
    await expect(e.embedQuery('x')).rejects.toThrow(/vector of 8 dimensions but EMBEDDING_DIM is 384/);
  });

  it('names a missing model directory at creation', () => {
    const missing = join(dir, 'no-such-model');
    expect(() => embedder({ EMBEDDING_MODEL: missing })).toThrow(`model directory ${missing} does not exist`);
    expect(() => embedder({ EMBEDDING_MODEL: '' })).toThrow(/EMBEDDING_MODEL is required/);
  });

  it('fails with EMBEDDING_FAILED naming the directory when it holds no model', async () => {
    const { e } = embedder({ EMBEDDING_MODEL: dir });
    await expect(e.embedQuery('x')).rejects.toMatchObject({
      code: 'EMBEDDING_FAILED',
      message: expect.stringContaining(`could not be loaded from directory ${dir}`),
    });
  });

  it('offline, a hub id not in the local cache fails without any download, saying so', async () => {
    const { e } = embedder({ EMBEDDING_MODEL: 'kilde-test/not-cached-model', EMBEDDING_OFFLINE: 'true' });
    await expect(e.embedQuery('x')).rejects.toThrow(/EMBEDDING_OFFLINE=true forbids downloading/);
  });

  it('tells local directories from hub ids', () => {
    expect(locateModel(modelDir)).toEqual({ kind: 'directory', id: modelDir });
    expect(locateModel(`file://${modelDir}`)).toEqual({ kind: 'directory', id: modelDir });
    expect(locateModel('intfloat/multilingual-e5-small')).toEqual({
      kind: 'hub',
      id: 'intfloat/multilingual-e5-small',
    });
  });
});
