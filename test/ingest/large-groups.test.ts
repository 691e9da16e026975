import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPooledChunker } from '../../src/chunk/pooled-chunker.js';
import { createPooledLexicalStage } from '../../src/embed/bm25/lexical-stage.js';
import type { StoredPoint } from '../../src/index/contract.js';
import { createPooledChunkLexical } from '../../src/ingest/pool-chunk-lexical.js';
import { IngestService } from '../../src/ingest/service.js';
import { makePdf } from '../helpers/make-pdf.js';
import { type Harness, pointsOf, startIngest, versionsOf } from './helpers/harness.js';

/*
 * A document larger than INGEST_SEGMENT_CHARS is chunked and analysed a segment group at a time; a
 * group sent while the worker still chunks the one before it is chunked in the pipeline's own
 * process (pool-chunk-lexical.ts, `behind`), so the two run side by side. Its stored rows are the
 * same as when every group goes through the worker.
 */
const ENV = {
  CHUNK_SPLIT_BY: 'markdown',
  CHUNK_SIZE: '120',
  CHUNK_OVERLAP: '20',
  INGEST_SEGMENT_CHARS: '10000',
  INGEST_BATCH_CHUNKS: '20',
  INGEST_SWEEP_INTERVAL: '0',
  EXTRACTION_WORKERS: '1',
};

let h: Harness;
let dir: string;
let path: string;
beforeEach(async () => {
  h = await startIngest(ENV);
  dir = await mkdtemp(join(tmpdir(), 'kilde-large-groups-'));
  path = join(dir, 'manual.pdf');
  // 60 pages, ≈ 50,000 characters (five segment groups), a heading set larger every tenth page.
  const words = ['council', 'permit', 'appeal', 'housing', 'deadline', 'welfare', 'district', 'payment'];
  const pages = Array.from({ length: 60 }, (_, p) => [
    ...(p % 10 === 0 ? [{ text: `Chapter ${p / 10 + 1}`, size: 18 }] : []),
    ...Array.from({ length: 12 }, (_, l) => ({
      text: `Page ${p + 1} line ${l + 1}: the ${words[(p + l) % 8]} of the ${words[(p * l) % 8]} office.`,
    })),
  ]);
  await writeFile(path, makePdf(pages));
});
afterEach(async () => {
  await h.close();
  await rm(dir, { recursive: true, force: true });
});
const target = (fileId: string) => ({
  fileId,
  filename: 'manual.pdf',
  collectionName: fileId,
  collectionType: 'file',
  userId: 'u1',
  overwrite: true,
  source: 'manual.pdf',
});

/** A stored row without what differs by file id and version. */
const row = (p: StoredPoint) => {
  const { file_id: _, ingest_version: __, collection_name: ___, ...meta } = p.meta;
  return { content: p.content, meta };
};

describe('a large document chunked a segment group at a time', () => {
  it('stores the same rows whether a group was chunked in this process or by the worker', async () => {
    const built = h.part.pipeline();
    const { service, pool } = built;
    const file = async () => ({ path, filename: 'manual.pdf', bytes: (await stat(path)).size });
    let turns = pool.turns;
    await service.ingest(target('placed'), file);
    const placedTurns = pool.turns - turns;
    // The same pipeline with every group sent to the pool as a task of its own.
    const pooled = createPooledChunkLexical(pool, { fallback: 'english', sparse: false });
    const reference = new IngestService({
      extractor: built.extractor,
      chunker: createPooledChunker(pool, 'markdown'),
      lexical: createPooledLexicalStage(pool, { sparseModel: undefined }),
      chunkLexical: (docs, signal) => pooled(docs, signal),
      fallbackLanguage: 'english',
      index: built.index,
      log: service.log,
      segmentChars: 10_000,
      batchChunks: 20,
    });
    turns = pool.turns;
    await reference.ingest(target('pooled'), file);
    const pooledTurns = pool.turns - turns;

    const placed = await pointsOf(h.index, 'placed');
    const all = await pointsOf(h.index, 'pooled');
    expect(placed.length).toBeGreaterThan(20);
    expect(placed.map(row)).toEqual(all.map(row));
    expect(new Set(placed.map((p) => p.meta.page_number)).size).toBeGreaterThan(3);
    // The analysed terms too: the same stems find the same chunks with the same scores.
    const hits = async (fileId: string) =>
      (await h.index.searchLexical({ text: '', terms: ['council', 'appeal'] }, { fileId }, 500)).map(
        (hit) => [hit.meta.split_id, hit.score],
      );
    const placedHits = await hits('placed');
    expect(placedHits.length).toBeGreaterThan(3);
    expect(placedHits).toEqual(await hits('pooled'));
    // One extraction turn, then a turn per group the worker chunked: fewer than one per group.
    expect(placedTurns).toBeLessThan(pooledTurns);
    expect(versionsOf(placed)).toHaveLength(1);
  });
});
