import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend, IngestArgs } from '../../src/cli/backend.js';
import { createLocalBackend } from '../../src/cli/local-backend.js';
import { fileIdFor } from '../../src/index/identifiers.js';

/*
 * `kilde ingest`'s head start (Backend.headStart: the first passes' files read while the index
 * opens) on the embedded index: the rows and errors are those of an ingest without it, and a file
 * changed between the head start and its pass is read again.
 */

const FIXTURE_PDF = new URL('../fixtures/documents/multi_page.pdf', import.meta.url);
const log = pino({ level: 'silent' });

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-cli-head-start-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A folder of files to ingest (one of them no PDF, one over MAX_UPLOAD_BYTES) and their ingest arguments. */
async function folder(name: string): Promise<IngestArgs[]> {
  const at = join(dir, name);
  await rm(at, { recursive: true, force: true });
  const { mkdir } = await import('node:fs/promises');
  await mkdir(at, { recursive: true });
  await writeFile(join(at, 'a.md'), '# Alpha\n\nThe first file, about alpacas and their wool.\n');
  await writeFile(join(at, 'b.txt'), 'The second file, about badgers and their burrows.\n');
  await copyFile(FIXTURE_PDF, join(at, 'c.pdf'));
  await writeFile(join(at, 'd.pdf'), '%PDF-1.7\n1 0 obj\n<< /Type /Catalog broken beyond repair');
  await writeFile(join(at, 'e.txt'), 'y'.repeat(300 * 1024));
  return ['a.md', 'b.txt', 'c.pdf', 'd.pdf', 'e.txt'].map((f) => ({
    path: join(at, f),
    fileId: fileIdFor('docs', f),
    filename: f,
    collection: 'docs',
    userId: 'test',
    source: f,
  }));
}

/** A local backend on its own data folder (MAX_UPLOAD_BYTES 256 KiB: e.txt is over it). */
function backend(name: string): Backend {
  return createLocalBackend(
    {
      KILDE_DATA_DIR: join(dir, `${name}-data`),
      EMBEDDING_PROVIDER: 'none',
      MAX_UPLOAD_BYTES: String(256 * 1024),
    },
    log,
  );
}

/** What an ingest left: each file's outcome (chunks or error) and its stored chunks' text. */
async function ingested(b: Backend, list: IngestArgs[]) {
  const settled = await b.ingestMany!(list);
  const rows = await Promise.all(
    list.map(async (a, i) => {
      const s = settled[i]!;
      if (s.status === 'rejected') {
        const err = s.reason as { code?: string; message: string };
        return { file: a.filename, error: { code: err.code, message: err.message } };
      }
      const page = (await b.chunks(a.fileId, { limit: '1000', include_content: 'full' })) as {
        chunks: Array<{ content: string; meta: Record<string, unknown> }>;
      };
      return {
        file: a.filename,
        chunks: s.value.chunks,
        // Everything stored but the version's id (each ingest names its own).
        rows: page.chunks.map(({ content, meta: { ingest_version: _, ...meta } }) => ({ content, meta })),
      };
    }),
  );
  return rows;
}

describe('kilde ingest head start', () => {
  it('stores the same rows and reports the same errors with and without the head start', async () => {
    const plain = backend('plain');
    let without: Awaited<ReturnType<typeof ingested>>;
    try {
      await plain.prepare();
      without = await ingested(plain, await folder('plain'));
    } finally {
      await plain.close();
    }
    expect(without.map((r) => ('error' in r ? r.error.code : 'ok'))).toEqual([
      'ok',
      'ok',
      'ok',
      'EXTRACTION_FAILED',
      'INVALID_REQUEST',
    ]);

    const ahead = backend('ahead');
    let withHead: Awaited<ReturnType<typeof ingested>>;
    try {
      const list = await folder('plain');
      await ahead.headStart!([list]);
      await ahead.prepare();
      withHead = await ingested(ahead, list);
    } finally {
      await ahead.close();
    }
    expect(withHead).toEqual(without);
  });

  it('reads a file changed after the head start again: its new text is in the index', async () => {
    const b = backend('changed');
    try {
      const list = await folder('changed');
      await b.headStart!([list]);
      await b.prepare();
      await writeFile(list[0]!.path, '# Alpha\n\nRewritten: now about armadillos.\n');
      const rows = await ingested(b, list);
      const text = JSON.stringify(rows[0]);
      expect(text).toContain('armadillos');
      expect(text).not.toContain('alpacas');
      expect(rows[1]).toMatchObject({ rows: [{ content: expect.stringContaining('badgers') }] });
    } finally {
      await b.close();
    }
  });
});
