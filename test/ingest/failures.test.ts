import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChunker } from '../../src/chunk/create-chunker.js';
import { loadTokenCounter } from '../../src/chunk/tokenizer.js';
import { createLexicalStage, type LexicalStage } from '../../src/embed/bm25/lexical-stage.js';
import { KildeError } from '../../src/errors.js';
import type { IndexPoint, StoredPoint } from '../../src/index/contract.js';
import { RESERVED_TENANTS } from '../../src/index/reserved.js';
import { filterList, type UpsertOptions, type VectorIndex } from '../../src/index/store.js';
import type { PipelineParts } from '../../src/ingest/pipeline.js';
import { IngestService } from '../../src/ingest/service.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import {
  FIXTURES,
  type Harness,
  multipartBody,
  pointsOf,
  startIngest,
  TOKENIZER,
  versionsOf,
} from './helpers/harness.js';

const DOC = `# Handbook\n\n${Array.from({ length: 12 }, (_, i) => `Paragraph ${i} explains the municipal procedure number ${i} in plain words for citizens.`).join('\n\n')}\n`;

let embed: FakeEmbeddingsServer;
let h: Harness;

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
  h = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    EMBEDDING_MODEL: 'fake-embed',
    EMBEDDING_DIM: '16',
    EMBEDDING_MAX_RETRIES: '0',
    TOKENIZER_MODEL: TOKENIZER,
    CHUNK_SIZE: '40',
    CHUNK_OVERLAP: '5',
  });
});
afterAll(async () => {
  await h?.close();
  await embed?.close();
});
beforeEach(() => {
  embed.always = undefined;
});

async function upload(fileId: string, name: string, content: Buffer | string) {
  const { body, headers } = multipartBody(
    { file_id: fileId, collection_name: `file-${fileId}`, user_id: 'u1' },
    { name, content },
  );
  return h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
}

/** Ingests DOC once and returns the indexed points: the "previous version" every failure must keep. */
async function previousVersion(fileId: string): Promise<StoredPoint[]> {
  const res = await upload(fileId, 'handbook.md', DOC);
  expect(res.statusCode).toBe(200);
  const points = await pointsOf(h.index, fileId);
  expect(points.length).toBeGreaterThan(2);
  expect(versionsOf(points)).toHaveLength(1);
  return points;
}

describe('a failed ingest leaves the previous version searchable', () => {
  it('convert: a corrupt PDF fails with EXTRACTION_FAILED', async () => {
    const before = await previousVersion('fail-convert');
    const res = await upload(
      'fail-convert',
      'broken.pdf',
      Buffer.from('%PDF-1.7\nthis is not a real pdf body'),
    );
    expect(res.json()).toMatchObject({ status: false, code: 'EXTRACTION_FAILED' });
    expect(res.statusCode).toBe(422);
    expect(await pointsOf(h.index, 'fail-convert')).toEqual(before);
  });

  it('convert: zero chunks answers 422 "no text could be extracted"', async () => {
    const before = await previousVersion('fail-empty');
    const res = await upload('fail-empty', 'blank.txt', '   \n\n  \n');
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      status: false,
      error: 'no text could be extracted',
      code: 'EXTRACTION_FAILED',
    });
    expect(await pointsOf(h.index, 'fail-empty')).toEqual(before);
  });

  it('convert: an unsupported file type fails with EXTRACTION_FAILED naming the type', async () => {
    const before = await previousVersion('fail-type');
    const res = await upload(
      'fail-type',
      'tool.exe',
      Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0, 0, 0, 0xff, 0xfe, 0x00, 0x01]),
    );
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ status: false, code: 'EXTRACTION_FAILED' });
    expect(res.json().error).toMatch(/unsupported|not supported/i);
    expect(await pointsOf(h.index, 'fail-type')).toEqual(before);
  });

  it('dense: the embedding endpoint answering 500 fails with EMBEDDING_FAILED', async () => {
    const before = await previousVersion('fail-dense');
    embed.always = { kind: 'status', status: 500 };
    const res = await upload('fail-dense', 'handbook-v2.md', `${DOC}\nA new closing paragraph.\n`);
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ status: false, code: 'EMBEDDING_FAILED' });
    expect(res.json().error).toBe('Embedding failed');
    expect(await pointsOf(h.index, 'fail-dense')).toEqual(before);
  });

  it('dense: an unreachable embedding endpoint fails the same way', async () => {
    const before = await previousVersion('fail-dense2');
    embed.always = { kind: 'hang-up' };
    const res = await upload('fail-dense2', 'handbook.md', DOC);
    expect(res.json()).toMatchObject({ status: false, code: 'EMBEDDING_FAILED' });
    expect(await pointsOf(h.index, 'fail-dense2')).toEqual(before);
  });

  it('shows the upstream detail with DEBUG=true', async () => {
    const debug = await startIngest({
      DEBUG: 'true',
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      EMBEDDING_MODEL: 'fake-embed',
      EMBEDDING_DIM: '16',
      EMBEDDING_MAX_RETRIES: '0',
    });
    try {
      embed.always = { kind: 'status', status: 500 };
      const { body, headers } = multipartBody(
        { file_id: 'dbg', collection_name: 'c', user_id: 'u1' },
        { name: 'handbook.md', content: DOC },
      );
      const res = await debug.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      expect(res.json()).toMatchObject({
        status: false,
        error: 'Embedding failed',
        code: 'EMBEDDING_FAILED',
      });
      expect(res.json().debug).toMatch(/HTTP 500/);
    } finally {
      await debug.close();
    }
  });

  it('hides internals unless DEBUG', async () => {
    embed.always = { kind: 'status', status: 500 };
    const res = await upload('fail-debug', 'handbook.md', DOC);
    expect(res.json()).not.toHaveProperty('debug');
    expect(JSON.stringify(res.json())).not.toMatch(/127\.0\.0\.1|stack/);
  });
});

/**
 * The sparse and write stages run in process (BM25) or against the embedded engine, so their faults
 * are injected at the interface: a BM25 encoder that throws, and a LanceDB index whose writes or
 * clean-up fail part-way (after really writing some points).
 */
describe('service-level faults on the real LanceDB index', () => {
  const log = pino({ level: 'silent' });
  let parts: PipelineParts;

  beforeAll(async () => {
    const built = h.part.pipeline();
    parts = {
      extractor: built.extractor,
      chunker: createChunker({ mode: 'token', size: 40, overlap: 5 }, await loadTokenCounter(TOKENIZER)),
      lexical: createLexicalStage({ sparseModel: 'Qdrant/bm25' }),
      fallbackLanguage: 'english',
      index: built.index,
      log,
    };
  });

  async function ingestWith(fileId: string, over: Partial<PipelineParts>) {
    const path = join(h.dataDir, `${fileId}.md`);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, `${DOC}\nRevised.\n`);
    const service = new IngestService({ ...parts, ...over });
    const target = {
      fileId,
      filename: 'handbook.md',
      collectionName: `file-${fileId}`,
      collectionType: 'file',
      userId: 'u1',
      overwrite: true,
      source: 'handbook.md',
    };
    return service.ingest(target, async () => ({ path, filename: 'handbook.md', bytes: 1 }));
  }

  it('sparse: a failing encoder fails with SPARSE_EMBEDDING_FAILED', async () => {
    const before = await previousVersion('fail-sparse');
    const failing: LexicalStage = {
      sparseModel: 'Qdrant/bm25',
      analyse: async () => {
        throw new Error('vocabulary file unreadable');
      },
    };
    const err = (await ingestWith('fail-sparse', { lexical: failing }).catch(
      (e: unknown) => e,
    )) as KildeError;
    expect(err).toBeInstanceOf(KildeError);
    expect(err.code).toBe('SPARSE_EMBEDDING_FAILED');
    expect(await pointsOf(h.index, 'fail-sparse')).toEqual(before);
  });

  it('write: a write failing half-way removes the points it wrote', async () => {
    const before = await previousVersion('fail-write');
    let written: IndexPoint[] = [];
    const halfWrite: VectorIndex = Object.create(parts.index, {
      upsert: {
        value: async (points: readonly IndexPoint[]) => {
          written = points.slice(0, Math.ceil(points.length / 2));
          await parts.index.upsert(written);
          throw new Error('disk full');
        },
      },
    });
    const err = (await ingestWith('fail-write', { index: halfWrite }).catch((e: unknown) => e)) as KildeError;
    expect(err.code).toBe('VECTORDB_WRITE_FAILED');
    expect(err.statusCode).toBe(502);
    expect(written.length).toBeGreaterThan(0);
    expect(await pointsOf(h.index, 'fail-write')).toEqual(before);
  });

  /** True for the one delete that retires the other versions (and the run's `writing` entry). */
  const isRetire = (filter: Parameters<VectorIndex['deleteWhere']>[0]) =>
    filterList(filter).some((f) => f.notIngestVersion !== undefined);

  it('write: when retiring the old version fails twice, the committed new version stays and the sweep retires the old one', async () => {
    const before = await previousVersion('fail-retire');
    let retireCalls = 0;
    const noRetire: VectorIndex = Object.create(parts.index, {
      deleteWhere: {
        value: async (filter: Parameters<VectorIndex['deleteWhere']>[0]) => {
          if (isRetire(filter)) {
            retireCalls++;
            throw new Error('timeout');
          }
          return parts.index.deleteWhere(filter);
        },
      },
    });
    const out = await ingestWith('fail-retire', { index: noRetire });
    expect(retireCalls).toBe(2);
    // Both complete versions are visible until the sweep; never a partial one.
    const both = await pointsOf(h.index, 'fail-retire');
    expect(versionsOf(both).sort()).toEqual([before[0]!.meta.ingest_version, out.ingestVersion].sort());
    const report = await new IngestService({ ...parts }).sweepVersions(0);
    expect(report).toMatchObject({ finished: 1, removed: 0 });
    const after = await pointsOf(h.index, 'fail-retire');
    expect(versionsOf(after)).toEqual([out.ingestVersion]);
    expect(after).toHaveLength(out.chunksCount);
    expect(await h.index.count({ reserved: 'writing', fileId: 'fail-retire' })).toBe(0);
  });

  it('streams a file in bounded batches: staged, invisible, then visible as a whole', async () => {
    const before = await previousVersion('stream');
    const batches: number[] = [];
    const embedded: number[] = [];
    let hiddenWhileStaging = true;
    const published: number[] = [];
    const recording: VectorIndex = Object.create(parts.index, {
      upsert: {
        value: async (points: readonly IndexPoint[], options?: UpsertOptions) => {
          const staging = points.filter((p) => p.meta.collection_name === RESERVED_TENANTS.staging);
          if (staging.length > 0) batches.push(staging.length);
          await parts.index.upsert(points, options);
          if (staging.length === 0) return;
          // Readers filtering on the collection see the previous version only, whole.
          const visible = await pointsOf(h.index, 'stream');
          if (JSON.stringify(visible) !== JSON.stringify(before)) hiddenWhileStaging = false;
        },
      },
      moveTo: {
        value: async (...a: Parameters<VectorIndex['moveTo']>) => {
          if (filterList(a[0]).some((f) => f.reserved === 'staging'))
            published.push(batches.reduce((x, y) => x + y, 0));
          return parts.index.moveTo(...a);
        },
      },
    });
    const dense = {
      provider: 'test',
      model: 'unit',
      dim: 16,
      embedDocuments: async (texts: string[]) => {
        embedded.push(texts.length);
        return texts.map(() => [1, ...new Array<number>(15).fill(0)]);
      },
      embedQuery: async () => [1, ...new Array<number>(15).fill(0)],
    };
    const out = await ingestWith('stream', { index: recording, dense, batchChunks: 2 });
    expect(out.chunksCount).toBeGreaterThan(4);
    // Every batch was staged, none over the bound, and all of them published in one move.
    expect(batches.length).toBe(Math.ceil(out.chunksCount / 2));
    expect(published).toEqual([out.chunksCount]);
    expect(Math.max(...batches, ...embedded)).toBeLessThanOrEqual(2);
    expect(embedded.reduce((a, b) => a + b, 0)).toBe(out.chunksCount);
    expect(hiddenWhileStaging).toBe(true);
    const after = await pointsOf(h.index, 'stream');
    expect(versionsOf(after)).toEqual([out.ingestVersion]);
    expect(after.map((p) => p.meta.split_id)).toEqual(after.map((_, i) => i));
    expect(after.every((p) => p.meta.collection_name === 'file-stream')).toBe(true);
    // The same chunks as an unbatched run of the same file gives.
    const whole = await ingestWith('stream', {});
    const again = await pointsOf(h.index, 'stream');
    expect(whole.chunksCount).toBe(out.chunksCount);
    expect(again.map((p) => [p.content, p.meta.char_start, p.meta.char_end, p.meta.headers])).toEqual(
      after.map((p) => [p.content, p.meta.char_start, p.meta.char_end, p.meta.headers]),
    );
    expect(await h.index.count({ reserved: 'staging' })).toBe(0);
    expect(await h.index.count({ reserved: 'writing', fileId: 'stream' })).toBe(0);
  });

  it('a failure mid-stream discards the staged batches and keeps the previous version', async () => {
    const before = await previousVersion('stream-fail');
    let calls = 0;
    let staged = 0;
    const dense = {
      provider: 'test',
      model: 'unit',
      dim: 16,
      embedDocuments: async (texts: string[]) => {
        calls += 1;
        if (calls === 3) throw new Error('model server went away');
        return texts.map(() => [1, ...new Array<number>(15).fill(0)]);
      },
      embedQuery: async () => [1, ...new Array<number>(15).fill(0)],
    };
    const counting: VectorIndex = Object.create(parts.index, {
      upsert: {
        value: async (points: readonly IndexPoint[], options?: UpsertOptions) => {
          staged += points.filter((p) => p.meta.collection_name === RESERVED_TENANTS.staging).length;
          return parts.index.upsert(points, options);
        },
      },
    });
    const err = (await ingestWith('stream-fail', { index: counting, dense, batchChunks: 2 }).catch(
      (e: unknown) => e,
    )) as KildeError;
    expect(err).toBeInstanceOf(KildeError);
    expect(err.code).toBe('EMBEDDING_FAILED');
    expect(staged).toBe(4);
    expect(await pointsOf(h.index, 'stream-fail')).toEqual(before);
    expect(await h.index.count({ fileId: 'stream-fail', reserved: 'staging' })).toBe(0);
    expect(await h.index.count({ fileId: 'stream-fail', reserved: 'writing' })).toBe(0);
  });

  it('write: one transient clean-up failure is retried and the ingest succeeds', async () => {
    await previousVersion('retire-once');
    let failures = 1;
    const flaky: VectorIndex = Object.create(parts.index, {
      deleteWhere: {
        value: async (filter: Parameters<VectorIndex['deleteWhere']>[0]) => {
          if (isRetire(filter) && failures-- > 0) throw new Error('timeout');
          return parts.index.deleteWhere(filter);
        },
      },
    });
    const out = await ingestWith('retire-once', { index: flaky });
    const after = await pointsOf(h.index, 'retire-once');
    expect(versionsOf(after)).toEqual([out.ingestVersion]);
    expect(after).toHaveLength(out.chunksCount);
  });
});

describe('concurrent ingests of one file_id', () => {
  it('serialise: 20 at once end with exactly one version and no duplicate points', async () => {
    const pdf = await readFile(join(FIXTURES, 'multi_page.pdf'));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? upload('busy', 'handbook.md', `${DOC}\nRevision ${i}.\n`)
          : upload('busy', 'multi_page.pdf', pdf),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
    const points = await pointsOf(h.index, 'busy');
    expect(versionsOf(points)).toHaveLength(1);
    expect(new Set(points.map((p) => p.id)).size).toBe(points.length);
    expect(points.map((p) => p.meta.split_id)).toEqual(points.map((_, i) => i));
    // the survivor is one complete run: its chunk count, one file name throughout
    expect(results.map((r) => r.json().chunks_count)).toContain(points.length);
    expect(new Set(points.map((p) => p.meta.name)).size).toBe(1);
  });
});
