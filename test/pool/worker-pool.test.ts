import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../../src/chunk/approx-counter.js';
import { createChunker } from '../../src/chunk/create-chunker.js';
import { createPooledChunker } from '../../src/chunk/pooled-chunker.js';
import { Bm25Encoder } from '../../src/embed/bm25/encoder.js';
import { createLexicalStage, createPooledLexicalStage } from '../../src/embed/bm25/lexical-stage.js';
import { createSparseEncoder } from '../../src/embed/create-sparse.js';
import { KildeError } from '../../src/errors.js';
import type { ExtractedDocument } from '../../src/extract/extractor.js';
import { createInprocessExtractor } from '../../src/extract/inprocess-engine.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { createPooledExtractor, GROUP_MIN_BYTES } from '../../src/extract/pooled-engine.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { DOCUMENTS } from '../fixtures/index.js';
import { ManualClock } from '../helpers/clock.js';

const settings = { mode: 'markdown' as const, size: 60, overlap: 10 };
const clock = new ManualClock();
const pool = new WorkerPool<IngestTasks>(
  {
    ...INGEST_POOL,
    size: 1,
    heapMb: 256,
    timeoutMs: 60_000,
    setup: {
      limits: DEFAULT_LIMITS,
      chunking: { settings, counter: 'approximate' },
    },
  },
  { log: pino({ level: 'silent' }), clock },
);
afterAll(() => pool.close());

const doc = (text: string): ExtractedDocument => ({
  text,
  metadata: { languages: [], mime_type: 'text/markdown' },
});

describe('the worker pool', () => {
  it('extracts, chunks and encodes exactly as the calling thread would', async () => {
    const file = { path: join(DOCUMENTS, 'word_tables.docx'), filename: 'word_tables.docx' };
    const [pooled] = await createPooledExtractor(pool, { name: 'inprocess' }).extract(file);
    const [local] = await createInprocessExtractor().extract(file);
    expect(pooled).toEqual(local);

    const docs = [pooled as ExtractedDocument, doc('# A\n\nOne two three.\n\n## B\n\nFour five six.')];
    const chunked = await createPooledChunker(pool, 'markdown').chunkAll(docs);
    const chunker = createChunker(settings, approximateTokenCounter());
    expect(chunked).toEqual(docs.map((d) => chunker.chunk(d)));

    const texts = chunked.flat().map((c) => c.content);
    const items = texts.map((text, i) => ({
      text,
      language: i % 2 === 0 ? ('english' as const) : ('danish' as const),
    }));
    const pooledLexical = await createPooledLexicalStage(pool, { sparseModel: 'Qdrant/bm25' }).analyse(items);
    expect(pooledLexical).toEqual(await createLexicalStage({ sparseModel: 'Qdrant/bm25' }).analyse(items));
    // Each chunk in its own language, with fastembed's vector of that language.
    expect(pooledLexical.sparse).toEqual(
      items.map((it) => createSparseEncoder('Qdrant/bm25', it.language).encodeDocuments([it.text])[0]),
    );
    expect(pooledLexical.lexical[0]).toBe(
      new Bm25Encoder({ language: 'english' }).terms(texts[0]!).join(' '),
    );
  });

  it('stops a task its caller gave up on, and takes the next one', async () => {
    const gone = new AbortController();
    const running = pool.run(
      { kind: 'chunk', docs: [{ text: 'word '.repeat(3_000_000) }] },
      { signal: gone.signal },
    );
    await clock.whenPending(1);
    gone.abort(new Error('client went away'));
    await expect(running).rejects.toThrow('client went away');
    expect(clock.pending).toBe(0);
    const [chunks] = await pool.run({ kind: 'chunk', docs: [{ text: 'Short text.' }] });
    expect(chunks?.[0]?.content).toBe('Short text.');
  });

  it('fails a chunking task past its time limit with EXTRACTION_FAILED naming EXTRACTION_TIMEOUT', async () => {
    const running = pool.run({ kind: 'chunk', docs: [{ text: 'word '.repeat(3_000_000) }] });
    await clock.whenPending(1);
    clock.advance(60_000);
    const err = await running.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KildeError);
    expect(err).toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 422,
      message: 'Document exceeds an extraction limit: processing took longer than 60 s (EXTRACTION_TIMEOUT)',
    });
  });
});

describe('many files in one task (a pass of small files)', () => {
  it('reads each file exactly as one task per file would, each with its own error', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'kilde-pool-many-'));
    try {
      await writeFile(join(tmp, 'a.md'), '# Notes\n\nDet er en kort dansk tekst om vejret i dag.');
      await writeFile(join(tmp, 'junk.bin'), Buffer.from([0, 1, 2, 3, 0, 0, 7]));
      // Small files are read together, a larger one (the PDF, 359 KB) in a task of its own.
      const files = [
        { path: join(DOCUMENTS, 'word_tables.docx'), filename: 'word_tables.docx' },
        { path: join(tmp, 'a.md'), filename: 'a.md' },
        { path: join(DOCUMENTS, 'normal_4pages.pdf'), filename: 'normal_4pages.pdf' },
        { path: join(tmp, 'junk.bin'), filename: 'junk.bin' },
        { path: join(DOCUMENTS, 'wiki_duck.html'), filename: 'wiki_duck.html' },
      ];
      const extractor = createPooledExtractor(pool, { name: 'inprocess' });
      const many = await extractor.extractMany!(files);
      const one = await Promise.allSettled(files.map((f) => extractor.extract(f)));
      expect(many).toEqual(one);
      expect(many.map((r) => r.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
      ]);
      expect((many[3] as PromiseRejectedResult).reason).toBeInstanceOf(KildeError);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it('reads a pass of small text files, and a few DOCX and PDF files, on one worker', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'kilde-pool-workers-'));
    // A manual clock: light work never waits long enough for its backlog to start a second worker.
    const two = new WorkerPool<IngestTasks>(
      { ...INGEST_POOL, size: 2, heapMb: 256, timeoutMs: 60_000, setup: { limits: DEFAULT_LIMITS } },
      { log: pino({ level: 'silent' }), clock: new ManualClock() },
    );
    try {
      const write = (name: string, text: string) =>
        writeFile(join(tmp, name), text).then(() => ({ path: join(tmp, name), filename: name }));
      const few = await Promise.all(
        ['a', 'b', 'c', 'd', 'e'].map((n) => write(`${n}.txt`, `File ${n} holds a short English sentence.`)),
      );
      const read = await createPooledExtractor(two, { name: 'inprocess' }).extractMany!(few);
      expect(read.map((r) => r.status)).toEqual(Array(5).fill('fulfilled'));
      // Five files of 40 bytes: one task, one worker process (a second costs its start-up for nothing).
      expect(two.pids).toHaveLength(1);
      // Four groups of small text (128 KiB): queued together, still one warm worker.
      const sentence = 'A longer English text that repeats its sentence to fill the file. ';
      const many = await Promise.all(
        ['f', 'g', 'h', 'i'].map((n) => write(`${n}.txt`, sentence.repeat(Math.ceil(GROUP_MIN_BYTES / 60)))),
      );
      const more = await createPooledExtractor(two, { name: 'inprocess' }).extractMany!(many);
      expect(more.map((r) => r.status)).toEqual(Array(4).fill('fulfilled'));
      expect(two.pids).toHaveLength(1);
      // Files that need real extractors (DOCX, PDF), well under a second of work: the same worker
      // reads them, loading mammoth and PDFium once (a second would load them again).
      const docs = ['word_tables.docx', 'normal_4pages.pdf', 'lorem_ipsum.docx'].map((name) => ({
        path: join(DOCUMENTS, name),
        filename: name,
      }));
      const heavy = await createPooledExtractor(two, { name: 'inprocess' }).extractMany!(docs);
      expect(heavy.map((r) => r.status)).toEqual(Array(3).fill('fulfilled'));
      expect(two.stats.started).toBe(1);
      expect(two.stats.workers).toMatchObject([{ libraries: ['docx', 'pdf'] }]);
    } finally {
      await two.close();
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it('gives each file its own time limit: the file that ran past it fails alone, the others are read', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'kilde-pool-late-'));
    // The second time limit the pool sets (the second file's, as it starts) is over at once.
    let limits = 0;
    const lateSecond = {
      now: () => Date.now(),
      sleep: async () => undefined,
      schedule(fn: () => void) {
        limits += 1;
        if (limits === 2) fn();
        return { cancel: () => undefined };
      },
    };
    const late = new WorkerPool<IngestTasks>(
      { ...INGEST_POOL, size: 1, heapMb: 256, timeoutMs: 5_000, setup: { limits: DEFAULT_LIMITS } },
      { log: pino({ level: 'silent' }), clock: lateSecond },
    );
    try {
      const files = await Promise.all(
        ['one', 'two', 'three'].map(async (name) => {
          const path = join(tmp, `${name}.txt`);
          await writeFile(path, `File ${name} holds a short English sentence.`);
          return { path, filename: `${name}.txt` };
        }),
      );
      const read = await createPooledExtractor(late, { name: 'inprocess' }).extractMany!(files);
      expect(read.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((read[1] as PromiseRejectedResult).reason).toMatchObject({
        code: 'EXTRACTION_FAILED',
        message: 'Document exceeds an extraction limit: processing took longer than 5 s (EXTRACTION_TIMEOUT)',
      });
      expect((read[2] as PromiseFulfilledResult<ExtractedDocument[]>).value[0]?.text).toBe(
        'File three holds a short English sentence.',
      );
      // Two tasks: the one stopped under the second file, then the first and third again.
      expect(limits).toBe(4);
    } finally {
      await late.close();
      await rm(tmp, { recursive: true, force: true });
    }
  });
});

describe('a worker process that dies under a task', () => {
  it('out of heap: EXTRACTION_FAILED naming EXTRACTION_MAX_HEAP_MB, and the pool goes on', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'kilde-pool-oom-'));
    const small = new WorkerPool<IngestTasks>(
      { ...INGEST_POOL, size: 1, heapMb: 64, timeoutMs: 60_000, setup: { limits: DEFAULT_LIMITS } },
      { log: pino({ level: 'silent' }) },
    );
    try {
      // A million-row CSV export (4 MiB): its rows outgrow the 64 MiB heap (and twice that) within a
      // fraction of a second of parsing, where a 40 MiB web page took 2–3 s of CPU to get there.
      const path = join(tmp, 'huge.csv');
      await writeFile(path, `id,name\n${'1,a\n'.repeat(1_000_000)}`);
      const err = await small
        .run({ kind: 'extract', file: { path, filename: 'huge.csv' }, engine: 'inprocess' })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'EXTRACTION_FAILED',
        statusCode: 422,
        message:
          'Document exceeds an extraction limit: processing needed more than 64 MiB of memory (EXTRACTION_MAX_HEAP_MB)',
      });
      await writeFile(join(tmp, 'small.md'), '# Small\n\nAfter the big one.');
      const [read] = [
        await small.run({
          kind: 'extract',
          file: { path: join(tmp, 'small.md'), filename: 'small.md' },
          engine: 'inprocess',
        }),
      ];
      expect(read.content.text).toContain('After the big one.');
    } finally {
      await small.close();
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it('killed from outside: 500 EXTRACTION_FAILED, and the next task gets a fresh worker', async () => {
    const running = pool.run({ kind: 'chunk', docs: [{ text: 'word '.repeat(3_000_000) }] });
    await clock.whenPending(1);
    const [pid] = pool.pids;
    process.kill(pid as number, 'SIGKILL');
    const err = await running.catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 500,
      message: 'The extraction worker stopped unexpectedly',
    });
    expect(clock.pending).toBe(0);
    const [chunks] = await pool.run({ kind: 'chunk', docs: [{ text: 'Short text.' }] });
    expect(chunks?.[0]?.content).toBe('Short text.');
    expect(pool.pids).not.toContain(pid);
  });
});
