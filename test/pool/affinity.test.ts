import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { type PoolSettings, WorkerPool } from '../../src/pool/worker-pool.js';
import { DOCUMENTS } from '../fixtures/index.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-pool-affinity-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/**
 * A file that holds a worker until the test opens it for writing: a named pipe, whose reader waits
 * for a writer. The read then fails (a pipe cannot be read at a position), freeing the worker; the
 * write may meet a closed pipe.
 */
function heldFile(name: string): { file: { path: string; filename: string }; release(): Promise<void> } {
  const path = join(tmp, name);
  execFileSync('mkfifo', [path]);
  return {
    file: { path, filename: name },
    release: () => writeFile(path, Buffer.from([0, 1, 2])).catch(() => undefined),
  };
}

/** Two workers at most, none kept unless `o` says so. */
const poolOf = (o: Partial<PoolSettings> = {}) =>
  new WorkerPool<IngestTasks>(
    { ...INGEST_POOL, size: 2, heapMb: 256, timeoutMs: 60_000, setup: { limits: DEFAULT_LIMITS }, ...o },
    { log: pino({ level: 'silent' }) },
  );

describe('the worker pool with task affinities', () => {
  it('gives a freed worker the queued task of a library it has loaded, not the oldest one', async () => {
    const pool = poolOf();
    try {
      const a = heldFile('a.pdf');
      const b = heldFile('b.pdf');
      const extract = (file: { path: string; filename: string }, affinity: string[]) =>
        pool.run({ kind: 'extract', file, engine: 'inprocess' }, { affinity }).then(
          (read) => ({ ok: true, text: read.content.text }),
          (err: unknown) => ({ ok: false, text: String(err) }),
        );
      // One worker holds a PDF task, the other a DOCX task; a DOCX then a PDF task wait behind them.
      const first = extract(a.file, ['pdf']);
      const second = extract(b.file, ['docx']);
      const settled: string[] = [];
      const docx = extract({ path: join(DOCUMENTS, 'lorem_ipsum.docx'), filename: 'lorem_ipsum.docx' }, [
        'docx',
      ]).then((r) => {
        settled.push('docx');
        return r;
      });
      const pdf = extract({ path: join(DOCUMENTS, 'multi_page.pdf'), filename: 'multi_page.pdf' }, [
        'pdf',
      ]).then((r) => {
        settled.push('pdf');
        return r;
      });
      expect(pool.load).toEqual({ threads: 2, queued: 2 });
      // The PDF worker is freed: it takes the PDF task, though the DOCX task has waited longer.
      await a.release();
      expect((await first).ok).toBe(false);
      expect((await pdf).text).toContain('The Evolution of the Word Processor');
      expect(settled).toEqual(['pdf']);
      // Then the DOCX task, on whichever worker is free first (a worker never waits for a suited task).
      await b.release();
      expect((await second).ok).toBe(false);
      expect((await docx).text).toContain('Lorem ipsum');
      expect(settled).toEqual(['pdf', 'docx']);
    } finally {
      await pool.close();
    }
  });

  it('with both workers idle, gives a DOCX to the one that has loaded mammoth and a PDF to the one with PDFium', async () => {
    const pool = poolOf();
    try {
      // Tasks of unknown size start a worker each: one loads the PDF library, the other mammoth.
      const a = heldFile('c.pdf');
      const b = heldFile('d.docx');
      const held = [a, b].map((h, i) =>
        pool
          .run(
            { kind: 'extract', file: h.file, engine: 'inprocess' },
            { affinity: [i === 0 ? 'pdf' : 'docx'] },
          )
          .catch(() => undefined),
      );
      await Promise.all([a.release(), b.release()]);
      await Promise.all(held);
      const byLibrary = () =>
        Object.fromEntries(pool.stats.workers.map((w) => [w.libraries.join(','), w.tasks]));
      expect(byLibrary()).toEqual({ pdf: 1, docx: 1 });
      const read = (name: string, lib: string) =>
        pool.run(
          { kind: 'extract', file: { path: join(DOCUMENTS, name), filename: name }, engine: 'inprocess' },
          { affinity: [lib], weight: 20_000 },
        );
      // Both idle: each file goes to the worker that has its library, whichever was started first.
      expect((await read('lorem_ipsum.docx', 'docx')).content.text).toContain('Lorem ipsum');
      expect(byLibrary()).toEqual({ pdf: 1, docx: 2 });
      expect((await read('multi_page.pdf', 'pdf')).content.text).toContain(
        'The Evolution of the Word Processor',
      );
      expect(byLibrary()).toEqual({ pdf: 2, docx: 2 });
      expect((await read('word_tables.docx', 'docx')).content.text).toBeTruthy();
      expect(byLibrary()).toEqual({ pdf: 2, docx: 3 });
      expect(pool.stats.started).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it("counts a kept worker's preloaded PDFium: a freed worker that has mammoth takes the DOCX before the older PDF", async () => {
    const pool = poolOf({ warm: 1, preloads: ['pdf'] });
    try {
      pool.prewarm();
      expect(pool.stats.workers).toMatchObject([{ libraries: ['pdf'], tasks: 0 }]);
      // The kept worker holds a task that needs no library; a second worker, one that loads mammoth.
      const kept = heldFile('e.txt');
      const other = heldFile('f.docx');
      const holding = [
        pool.run({ kind: 'extract', file: kept.file, engine: 'inprocess' }).catch(() => undefined),
        pool
          .run({ kind: 'extract', file: other.file, engine: 'inprocess' }, { affinity: ['docx'] })
          .catch(() => undefined),
      ];
      const read = (name: string, lib: string) =>
        pool.run(
          { kind: 'extract', file: { path: join(DOCUMENTS, name), filename: name }, engine: 'inprocess' },
          { affinity: [lib], weight: 20_000 },
        );
      const settled: string[] = [];
      const pdf = read('multi_page.pdf', 'pdf').finally(() => settled.push('pdf'));
      const docx = read('lorem_ipsum.docx', 'docx').finally(() => settled.push('docx'));
      expect(pool.load).toEqual({ threads: 2, queued: 2 });
      // The mammoth worker frees first: it takes the DOCX before the older PDF, which suits the
      // worker with PDFium (still busy: the mammoth worker then reads the PDF too, rather than wait).
      await other.release();
      expect((await docx).content.text).toContain('Lorem ipsum');
      expect((await pdf).content.text).toContain('The Evolution of the Word Processor');
      expect(settled).toEqual(['docx', 'pdf']);
      await kept.release();
      await Promise.all(holding);
    } finally {
      await pool.close();
    }
  });
});
