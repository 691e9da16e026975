import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExtractor, ownPool } from '../../src/extract/create-extractor.js';
import type { ExtractedDocument, SourceFile } from '../../src/extract/extractor.js';
import { withHeadStart } from '../../src/extract/head-start.js';
import type { ExtractTasks } from '../../src/extract/pool-tasks.js';
import type { WorkerPool } from '../../src/pool/worker-pool.js';
import { settings, silent } from './helpers.js';

/*
 * The local ingest's head start (src/extract/head-start.ts) over the real pooled engine and worker
 * processes: what a pass takes is what it would have read itself, a file changed since is read again.
 */

const FIXTURE_PDF = new URL('../fixtures/documents/multi_page.pdf', import.meta.url);
const LIMITS = { maxBytes: 1024 * 1024, streamBytes: 1_000_000 };

let dir: string;
let pool: WorkerPool<ExtractTasks>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-head-start-'));
  pool = ownPool({ ...settings(), EXTRACTION_WORKERS: 1 }, { log: silent });
});

afterAll(async () => {
  await pool.close();
  await rm(dir, { recursive: true, force: true });
});

/** A fresh set of files: Markdown, plain text, a PDF and a file that is no PDF. */
async function files(name: string): Promise<SourceFile[]> {
  const at = (f: string) => join(dir, `${name}-${f}`);
  await writeFile(at('a.md'), '# Alpha\n\nThe first file, about alpacas.\n');
  await writeFile(at('b.txt'), 'The second file, about badgers and their burrows.\n');
  await copyFile(FIXTURE_PDF, at('c.pdf'));
  await writeFile(at('broken.pdf'), '%PDF-1.7\n1 0 obj\n<< /Type /Catalog broken beyond repair');
  return ['a.md', 'b.txt', 'c.pdf', 'broken.pdf'].map((f) => ({ path: at(f), filename: f }));
}

const engine = () => createExtractor('inprocess', settings(), { log: silent, pool });

/** Each file's result as data: its documents' text and metadata, or its error's code and message. */
function outcomes(read: Array<PromiseSettledResult<ExtractedDocument[]>>) {
  return read.map((r) =>
    r.status === 'fulfilled'
      ? { ok: r.value.map((d) => ({ text: d.text, metadata: d.metadata })) }
      : { error: { code: (r.reason as { code?: string }).code, message: (r.reason as Error).message } },
  );
}

describe('extraction head start', () => {
  it('gives a pass the same documents and errors it would read itself, without reading them again', async () => {
    const plain = await files('plain');
    const expected = outcomes(await engine().extractMany!(plain));
    expect(expected[3]).toMatchObject({ error: { code: 'EXTRACTION_FAILED' } });

    const ahead = await files('ahead');
    const { extractor, headStart } = withHeadStart(engine());
    await headStart.read(ahead, LIMITS);
    await headStart.settled();
    expect(headStart.held).toBe(4);
    const turns = pool.turns;
    const read = await extractor.extractMany!(ahead);
    // Nothing went to the workers: every file's result was taken.
    expect(pool.turns).toBe(turns);
    expect(outcomes(read)).toEqual(expected);
    expect(headStart.held).toBe(0);
  });

  it('reads a file changed since its head start again, and its new text is the one returned', async () => {
    const list = await files('changed');
    const { extractor, headStart } = withHeadStart(engine());
    await headStart.read(list, LIMITS);
    await headStart.settled();
    await writeFile(list[0]!.path, '# Alpha\n\nRewritten: now about armadillos.\n');
    const turns = pool.turns;
    const read = outcomes(await extractor.extractMany!(list));
    expect(pool.turns).toBeGreaterThan(turns);
    expect(read[0]).toMatchObject({ ok: [{ text: expect.stringContaining('armadillos') }] });
    expect(JSON.stringify(read[0])).not.toContain('alpacas');
    expect(read[1]).toMatchObject({ ok: [{ text: expect.stringContaining('badgers') }] });
  });

  it('reads only what a pass would read whole, and holds nothing of a pass once dropped', async () => {
    const list = await files('limits');
    const big = join(dir, 'limits-big.txt');
    await writeFile(big, 'x'.repeat(4096));
    const huge = join(dir, 'limits-huge.pdf');
    await writeFile(huge, Buffer.alloc(300 * 1024));
    const { extractor, headStart } = withHeadStart(engine());
    // Over MAX_UPLOAD_BYTES, plain text streamed by the pass, a file that is not there: not read.
    await headStart.read(
      [
        ...list,
        { path: big, filename: 'limits-big.txt' },
        { path: huge, filename: 'limits-huge.pdf' },
        { path: join(dir, 'missing.md'), filename: 'missing.md' },
      ],
      { maxBytes: 256 * 1024, streamBytes: 1024 },
    );
    await headStart.settled();
    expect(headStart.held).toBe(4);
    // The pass took the Markdown file only (the others failed before their read, say).
    const [a] = await extractor.extractMany!([list[0]!]);
    expect(a?.status).toBe('fulfilled');
    expect(headStart.held).toBe(3);
    await headStart.drop(list.map((f) => f.path));
    expect(headStart.held).toBe(0);
  });

  it('answers a cancelled pass with its abort, not with what was read ahead', async () => {
    const list = await files('cancelled');
    const { extractor, headStart } = withHeadStart(engine());
    await headStart.read(list, LIMITS);
    const stop = new AbortController();
    stop.abort(new Error('client went away'));
    const read = await extractor.extractMany!(list, { signal: stop.signal });
    expect(read.every((r) => r.status === 'rejected')).toBe(true);
    expect(read.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : ''))).toEqual(
      list.map(() => 'client went away'),
    );
  });
});
