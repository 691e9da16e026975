import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPooledChunker } from '../../src/chunk/pooled-chunker.js';
import { createPooledLexicalStage } from '../../src/embed/bm25/lexical-stage.js';
import type { StoredPoint } from '../../src/index/contract.js';
import { IngestService } from '../../src/ingest/service.js';
import { DANISH_CORPUS } from '../fixtures/index.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, pointsOf, startIngest, versionsOf } from './helpers/harness.js';

/**
 * A plain-text or Markdown file larger than INGEST_SEGMENT_CHARS is read as a stream (never held
 * whole) and gives exactly the chunks the whole-text path gives: same text, offsets, breadcrumbs,
 * languages and title; a re-ingest replaces it as any other, and an over-limit file fails before
 * anything is written.
 */
const ENV = {
  CHUNK_SPLIT_BY: 'markdown',
  CHUNK_SIZE: '120',
  CHUNK_OVERLAP: '20',
  INGEST_SEGMENT_CHARS: '10000',
  INGEST_BATCH_CHUNKS: '50',
  INGEST_SWEEP_INTERVAL: '0',
};

let h: Harness;
let dir: string;
beforeEach(async () => {
  h = await startIngest(ENV);
  dir = await mkdtemp(join(tmpdir(), 'kilde-streamed-'));
});
afterEach(async () => {
  await h.close();
  await rm(dir, { recursive: true, force: true });
});

const target = (fileId: string, collectionName: string) => ({
  fileId,
  filename: 'book.md',
  collectionName,
  collectionType: 'file',
  userId: 'u1',
  overwrite: true,
  source: 'book.md',
});

const shape = (points: readonly StoredPoint[]) =>
  points.map((p) => ({
    content: p.content,
    start: p.meta.char_start,
    end: p.meta.char_end,
    headers: p.meta.headers,
    languages: p.meta.languages,
    title: p.meta.title,
  }));

async function book(): Promise<string> {
  const chapters = (await readdir(DANISH_CORPUS)).filter((f) => f.endsWith('.md')).sort();
  const texts = await Promise.all(chapters.map((f) => readFile(join(DANISH_CORPUS, f), 'utf8')));
  let text = `# Indfødsret\n\n${texts.join('\r\n\r\n')}`;
  while (text.length < 40_000) text += `\r\n\r\n${texts.join('\r\n\r\n')}`;
  return text;
}

describe('a large plain-text file', () => {
  it('is streamed and chunked exactly as the whole text would be', async () => {
    const text = await book();
    expect(text.length).toBeGreaterThan(3 * 10_000);
    const path = join(dir, 'book.md');
    await writeFile(path, text);
    const built = h.part.pipeline();
    const { service } = built;
    await service.ingest(target('streamed', 'streamed'), async () => ({
      path,
      filename: 'book.md',
      bytes: Buffer.byteLength(text),
    }));
    // The same file through the whole-text path: the same engine without its stream.
    const whole = new IngestService({
      extractor: {
        name: built.extractor.name,
        acceptsProfile: false,
        extract: (file, o) => built.extractor.extract(file, o),
      },
      chunker: createPooledChunker(built.pool, 'markdown'),
      lexical: createPooledLexicalStage(built.pool, { sparseModel: undefined }),
      fallbackLanguage: 'english',
      index: built.index,
      log: service.log,
      segmentChars: 10_000,
      batchChunks: 50,
    });
    await whole.ingest(target('whole', 'whole'), async () => ({
      path,
      filename: 'book.md',
      bytes: Buffer.byteLength(text),
    }));
    // Only the first ingest streamed.
    const streamedLines = h.logs.lines.filter((l) => l.msg === 'plain text streamed (not held whole)');
    expect(streamedLines.map((l) => l.fileId)).toEqual(['streamed']);
    const streamed = await pointsOf(h.index, 'streamed');
    const reference = await pointsOf(h.index, 'whole');
    expect(streamed.length).toBeGreaterThan(100);
    expect(shape(streamed)).toEqual(shape(reference));
    expect(streamed[0]?.meta.languages).toEqual(['da']);
    expect(streamed[0]?.meta.title).toBe('Indfødsret');
    // Chunked and analysed in one pool task per segment group (the pipeline's chunkLexical, the next
    // group's task sent while this one is written): the lexical side the separate stages give. Danish
    // stems ("borg" of "borgerne") match only analysed terms, not a chunk's plain words.
    const hits = async (fileId: string) =>
      (await h.index.searchLexical({ text: '', terms: ['borg', 'valg'] }, { fileId }, 500)).map((hit) => [
        hit.meta.split_id,
        hit.score,
      ]);
    const streamedHits = await hits('streamed');
    expect(streamedHits.length).toBeGreaterThan(10);
    expect(streamedHits).toEqual(await hits('whole'));
    // Written in staged batches, then published as one version.
    expect(versionsOf(streamed)).toHaveLength(1);
    expect(await h.index.count({ reserved: 'staging' })).toBe(0);
  });

  it('is replaced by a re-ingest, and one over EXTRACTION_MAX_TEXT_CHARS fails keeping the old version', async () => {
    await h.close();
    h = await startIngest({ ...ENV, EXTRACTION_MAX_TEXT_CHARS: '60000' });
    const { service } = h.part.pipeline();
    const path = join(dir, 'book.md');
    const text = await book();
    const first = text.slice(0, 30_000);
    await writeFile(path, first);
    const load = async () => ({ path, filename: 'book.md', bytes: Buffer.byteLength(first) });
    const v1 = await service.ingest(target('book', 'docs'), load);
    await writeFile(path, text.slice(0, 25_000));
    const v2 = await service.ingest(target('book', 'docs'), load);
    expect(versionsOf(await pointsOf(h.index, 'book'))).toEqual([v2.ingestVersion]);
    expect(v2.ingestVersion).not.toBe(v1.ingestVersion);
    await writeFile(path, `${text}\n${text}`);
    expect(2 * text.length).toBeGreaterThan(60_000);
    await expect(service.ingest(target('book', 'docs'), load)).rejects.toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 422,
    });
    expect(versionsOf(await pointsOf(h.index, 'book'))).toEqual([v2.ingestVersion]);
  });

  it('a small file is read whole, and each file counts one convert stage', async () => {
    const path = join(dir, 'small.md');
    await writeFile(path, '# Small\n\nA short note.');
    const { service } = h.part.pipeline();
    await service.ingest(target('small', 'docs'), async () => ({ path, filename: 'small.md', bytes: 23 }));
    expect(h.logs.lines.some((l) => l.msg === 'plain text streamed (not held whole)')).toBe(false);
    const text = (await h.app.inject({ url: '/metrics', headers: AUTH })).body;
    expect(text).toMatch(/pipeline_stage_duration_seconds_count\{stage="convert"\} 1\n/);
  });
});
