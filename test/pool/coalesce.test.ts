import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPooledChunker } from '../../src/chunk/pooled-chunker.js';
import { createPooledLexicalStage } from '../../src/embed/bm25/lexical-stage.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { createPooledExtractor } from '../../src/extract/pooled-engine.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { BACKLOG_MS, STALL_MS, WorkerPool } from '../../src/pool/worker-pool.js';
import { DOCUMENTS } from '../fixtures/index.js';
import { ManualClock } from '../helpers/clock.js';

/*
 * Concurrent callers' small tasks that wait for a busy worker are merged into one worker turn
 * (worker-pool.ts, `MERGE`), yet each caller settles on its own. A named pipe holds the only worker
 * busy while the test queues tasks behind it; the turns the pool hands out are counted.
 */
let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'kilde-pool-merge-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const settings = { mode: 'markdown' as const, size: 60, overlap: 10 };
const poolOf = (o: { size?: number; heapMb?: number; clock?: ManualClock } = {}) =>
  new WorkerPool<IngestTasks>(
    {
      ...INGEST_POOL,
      size: o.size ?? 1,
      heapMb: o.heapMb ?? 256,
      timeoutMs: 60_000,
      setup: { limits: DEFAULT_LIMITS, chunking: { settings, counter: 'approximate' } },
    },
    { log: pino({ level: 'silent' }), clock: o.clock ?? new ManualClock() },
  );

let held = 0;
/** A text file whose reading holds a worker until `release` opens the pipe's other end. */
function heldFile(): { file: { path: string; filename: string; bytes: number }; release(): Promise<void> } {
  const name = `held-${held++}.txt`;
  const path = join(tmp, name);
  execFileSync('mkfifo', [path]);
  return {
    file: { path, filename: name, bytes: 0 },
    release: () => writeFile(path, 'released').catch(() => undefined),
  };
}

async function textFile(name: string, text: string) {
  const path = join(tmp, name);
  await writeFile(path, text);
  return { path, filename: name };
}

/** Until `ready()` holds, turn by turn of the event loop (a file's size is read before its task is queued). */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise((resolve) => setImmediate(resolve));
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Settles as `{ ok, value | error }`, so a test compares outcomes without a rejection escaping. */
const outcome = (p: Promise<unknown>): Promise<Outcome> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/**
 * Holds one of `pool`'s workers on a file that cannot be read until `hold.release()`: a task of
 * size 0 (estimated at nothing), or with `unknownSize` a long task, for all the pool knows.
 */
function holdWorker(
  pool: WorkerPool<IngestTasks>,
  o: { unknownSize?: true } = {},
): {
  hold: ReturnType<typeof heldFile>;
  first: Promise<Outcome>;
} {
  const hold = heldFile();
  const first = outcome(
    pool.run(
      { kind: 'extract', file: hold.file, engine: 'inprocess' },
      { weight: o.unknownSize ? undefined : 0 },
    ),
  );
  return { hold, first };
}

/** Each caller's small work, as calls to make: a file read, its chunks, their terms. */
function smallWork(
  pool: WorkerPool<IngestTasks>,
  files: Array<{ path: string; filename: string }>,
): Array<() => Promise<Outcome>> {
  const extractor = createPooledExtractor(pool, { name: 'inprocess' });
  const chunker = createPooledChunker(pool, 'markdown');
  const lexical = createPooledLexicalStage(pool, { sparseModel: 'Qdrant/bm25' });
  return files.flatMap((file, i) => [
    () => outcome(extractor.extract(file)),
    () =>
      outcome(
        chunker.chunkAll([{ text: `# Doc ${i}\n\nThe ${i}th short document, in two sentences. Here.` }]),
      ),
    () => outcome(lexical.analyse([{ text: `Stemming the ${i}th running text`, language: 'english' }])),
  ]);
}

/** All the calls at once. */
const together = <T>(calls: Array<() => Promise<T>>): Array<Promise<T>> => calls.map((call) => call());

describe('queued small tasks merged into one worker turn', () => {
  it('gives each caller exactly what it gets alone, its own error included, in one turn', async () => {
    const pool = poolOf();
    try {
      const files = await Promise.all(
        ['one', 'two', 'three'].map((n) =>
          textFile(`${n}.md`, `# ${n}\n\nFile ${n} holds a short sentence.`),
        ),
      );
      files.splice(1, 0, await textFile('junk.bin', '\u0000\u0001\u0002\u0003\u0000\u0000\u0007'));
      const { hold, first } = holdWorker(pool);
      const merged = together(smallWork(pool, files));
      await until(() => pool.load.queued === 12);
      await hold.release();
      await first;
      const shared = await Promise.all(merged);
      // The held task's turn, then all twelve queued tasks in one.
      expect(pool.turns).toBe(2);
      const alone: typeof shared = [];
      for (const call of smallWork(pool, files)) alone.push(await call());
      expect(pool.turns).toBe(2 + 12);
      expect(shared).toEqual(alone);
      // The junk file fails its own caller only.
      expect(shared.map((r) => r.ok)).toEqual([true, true, true, false, true, true, ...Array(6).fill(true)]);
      expect((shared[3] as { error: unknown }).error).toMatchObject({
        code: 'EXTRACTION_FAILED',
        message: expect.stringContaining('Unsupported file type'),
      });
    } finally {
      await pool.close();
    }
  });

  it('a task past its time limit in a merged turn fails alone; the tasks after it run on a fresh worker', async () => {
    const clock = new ManualClock();
    const pool = poolOf({ clock });
    try {
      const { hold, first } = holdWorker(pool);
      const small = (text: string) => pool.run({ kind: 'chunk', docs: [{ text }] }, { weight: text.length });
      const before = small('Before the slow one.');
      // Light by its caller's word, but seconds of work: it shares the turn.
      const slow = outcome(
        pool.run({ kind: 'chunk', docs: [{ text: 'word '.repeat(3_000_000) }] }, { weight: 10 }),
      );
      const after = small('After the slow one.');
      await hold.release();
      await first;
      expect((await before)[0]?.[0]?.content).toBe('Before the slow one.');
      const [pid] = pool.pids;
      // The slow task has started: its time limit is the one pending.
      await clock.whenPending(1);
      clock.advance(60_000);
      expect(await slow).toMatchObject({
        ok: false,
        error: { code: 'EXTRACTION_FAILED', message: expect.stringContaining('EXTRACTION_TIMEOUT') },
      });
      expect((await after)[0]?.[0]?.content).toBe('After the slow one.');
      expect(pool.pids).not.toContain(pid);
      expect(pool.turns).toBe(3);
    } finally {
      await pool.close();
    }
  });

  it('a worker out of heap under a merged turn: the task that caused it fails, the others complete', async () => {
    const pool = poolOf({ heapMb: 64 });
    try {
      // A million-row CSV export (4 MiB): its rows outgrow the worker's 64 MiB heap (and twice that)
      // within a fraction of a second of parsing. A 40 MiB web page took 2–3 s of CPU to get there,
      // each of the two times it runs here, and timed the test out on a loaded machine.
      const huge = await textFile('huge.csv', `id,name\n${'1,a\n'.repeat(1_000_000)}`);
      const files = await Promise.all(
        ['a', 'b', 'c'].map((n) => textFile(`${n}.txt`, `File ${n} holds a short English sentence.`)),
      );
      const { hold, first } = holdWorker(pool);
      const read = (file: { path: string; filename: string }, weight: number) =>
        outcome(pool.run({ kind: 'extract', file, engine: 'inprocess' }, { weight }));
      // The huge export claims to be small: it is merged with the others.
      const out = [read(files[0]!, 40), read(huge, 10), read(files[1]!, 40), read(files[2]!, 40)];
      await hold.release();
      await first;
      const [a, big, b, c] = await Promise.all(out);
      expect(big).toMatchObject({
        ok: false,
        error: { code: 'EXTRACTION_FAILED', message: expect.stringContaining('EXTRACTION_MAX_HEAP_MB') },
      });
      for (const [r, n] of [
        [a, 'a'],
        [b, 'b'],
        [c, 'c'],
      ] as const) {
        expect(r).toMatchObject({
          ok: true,
          value: { content: { text: `File ${n} holds a short English sentence.` } },
        });
      }
      // The held turn, the merged one that died, the huge export alone (it dies again), the rest.
      expect(pool.turns).toBe(4);
    } finally {
      await pool.close();
    }
  });

  it("an aborted caller's task in a merged turn fails that caller only", async () => {
    const clock = new ManualClock();
    const pool = poolOf({ clock });
    try {
      const { hold, first } = holdWorker(pool);
      const small = (text: string, signal?: AbortSignal) =>
        outcome(pool.run({ kind: 'chunk', docs: [{ text }] }, { weight: text.length, signal }));
      const running = new AbortController();
      const waiting = new AbortController();
      const before = small('Before.');
      const slow = outcome(
        pool.run(
          { kind: 'chunk', docs: [{ text: 'word '.repeat(3_000_000) }] },
          { weight: 10, signal: running.signal },
        ),
      );
      const gone = small('Its caller leaves before it starts.', waiting.signal);
      const after = small('After.');
      await hold.release();
      await first;
      expect(await before).toMatchObject({ ok: true });
      await clock.whenPending(1);
      // The slow task is running, the two after it wait in the same turn.
      waiting.abort(new Error('second caller went away'));
      running.abort(new Error('first caller went away'));
      expect(await slow).toMatchObject({ ok: false, error: { message: 'first caller went away' } });
      expect(await gone).toMatchObject({ ok: false, error: { message: 'second caller went away' } });
      expect(await after).toMatchObject({ ok: true, value: [[{ content: 'After.' }]] });
      expect(pool.turns).toBe(3);
    } finally {
      await pool.close();
    }
  });
});

describe('a second worker only when the queued work warrants it', () => {
  it('a DOCX and small text work wait for the busy worker; a backlog of work, or a long wait, starts the second', async () => {
    const clock = new ManualClock();
    const pool = poolOf({ size: 2, clock });
    try {
      const { hold, first } = holdWorker(pool);
      const files = await Promise.all(
        ['a', 'b', 'c'].map((n) => textFile(`w${n}.txt`, `File ${n} holds a short English sentence.`)),
      );
      const light = together(smallWork(pool, files));
      // A DOCX needs mammoth, but 15 KB of it is milliseconds of work: it waits for the busy worker.
      const extractor = createPooledExtractor(pool, { name: 'inprocess' });
      const docx = extractor.extract({
        path: join(DOCUMENTS, 'lorem_ipsum.docx'),
        filename: 'lorem_ipsum.docx',
      });
      await until(() => pool.load.queued === 10);
      expect(pool.stats.started).toBe(1);
      // Work estimated at seconds of one worker's time (8 MiB of text, by its caller's word: the
      // policy reads only the size) queued behind it starts the second.
      const long = pool.run({ kind: 'chunk', docs: [{ text: 'A long text.' }] }, { weight: 8 * 1024 * 1024 });
      expect(pool.stats.started).toBe(2);
      expect((await docx)[0]?.text).toContain('Lorem ipsum');
      expect((await long)[0]?.[0]?.content).toBe('A long text.');
      expect((await Promise.all(light)).every((r) => r.ok)).toBe(true);
      await hold.release();
      await first;
    } finally {
      await pool.close();
    }

    const later = poolOf({ size: 2, clock });
    try {
      const { hold, first } = holdWorker(later, { unknownSize: true });
      const light = together(smallWork(later, [await textFile('x.txt', 'A short English sentence.')]));
      const docx = createPooledExtractor(later, { name: 'inprocess' }).extract({
        path: join(DOCUMENTS, 'word_tables.docx'),
        filename: 'word_tables.docx',
      });
      await until(() => later.load.queued === 4);
      expect(later.pids).toHaveLength(1);
      // Work that has waited `BACKLOG_MS` on the pool's clock behind a long task starts the second worker.
      clock.advance(BACKLOG_MS - 1);
      expect(later.pids).toHaveLength(1);
      clock.advance(1);
      expect(later.pids).toHaveLength(2);
      expect(later.stats.started).toBe(2);
      expect((await Promise.all(light)).every((r) => r.ok)).toBe(true);
      expect((await docx)[0]?.text).toBeTruthy();
      await hold.release();
      await first;
    } finally {
      await later.close();
    }
  });

  it('work queued behind a worker that keeps starting tasks is no backlog; a second worker starts once none has started for STALL_MS', async () => {
    const clock = new ManualClock();
    const pool = poolOf({ size: 2, clock });
    try {
      const a = holdWorker(pool);
      const b = heldFile();
      // A task that loads a library never shares a turn: the worker takes it alone next.
      const second = outcome(
        pool.run({ kind: 'extract', file: b.file, engine: 'inprocess' }, { weight: 0, affinity: ['docx'] }),
      );
      const light = together(smallWork(pool, [await textFile('m.txt', 'A short English sentence.')]));
      await until(() => pool.load.queued === 4);
      // Behind tasks estimated short, the wait is `STALL_MS` (they run long because the cores are busy).
      clock.advance(STALL_MS - 100);
      // The worker frees and starts the next task: the queue moves, so the wait starts again from there.
      await a.hold.release();
      await a.first;
      await until(() => pool.load.queued === 3);
      clock.advance(200);
      expect(pool.stats.started).toBe(1);
      clock.advance(STALL_MS - 200);
      expect(pool.stats.started).toBe(2);
      expect((await Promise.all(light)).every((r) => r.ok)).toBe(true);
      await b.release();
      await second;
    } finally {
      await pool.close();
    }
  });
});
