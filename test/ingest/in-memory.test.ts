import { watch } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadsRoot } from '../../src/ingest/temp-dir.js';
import { AUTH } from '../helpers/app.js';
import { makePdf } from '../helpers/make-pdf.js';
import { type Harness, multipartBody, pointsOf, startIngest } from './helpers/harness.js';

/*
 * A small upload (up to 64 KiB) is handed to the worker pool in memory instead of through a file in
 * an upload folder: the same chunks come out, no folder is made for it, a larger one goes through a
 * file as before, and a small file that is not plain text (a PDF, one named .txt too) is still read
 * by its reader. The size limit and the half-close guard are those of every upload
 * (ingest.test.ts "size limit", half-close.test.ts).
 */
let h: Harness;
beforeAll(async () => {
  h = await startIngest({ MAX_UPLOAD_BYTES: String(256 * 1024) });
});
afterAll(async () => {
  await h?.close();
});

/** Names of this process's upload folders made while `fn` runs (inotify on the uploads root). */
async function foldersMadeDuring(fn: () => Promise<void>): Promise<string[]> {
  await mkdir(uploadsRoot(), { recursive: true });
  const made: string[] = [];
  const watcher = watch(uploadsRoot(), (_event, name) => {
    if (name?.startsWith(`${process.pid}-`) && !made.includes(name)) made.push(name);
  });
  try {
    await fn();
    // Events already queued are delivered before the next turn of the loop ends.
    await new Promise((r) => setImmediate(r));
  } finally {
    watcher.close();
  }
  return made;
}

/** This process's upload folders now. */
async function ourUploadFolders(): Promise<string[]> {
  const names = await readdir(uploadsRoot()).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(`${process.pid}-`));
}

async function put(fileId: string, name: string, content: Buffer | string, type?: string) {
  const { body, headers } = multipartBody(
    { file_id: fileId, collection_name: 'kb-memory', user_id: 'u1' },
    { name, content, ...(type ? { type } : {}) },
  );
  return h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
}

const paragraph = (n: number) =>
  Array.from({ length: n }, (_, i) => `Sentence ${i} about the harbour crane and its winch.`).join(' ');

describe('small uploads in memory', () => {
  it('a small text file ingests whole without an upload folder; a larger one through a file', async () => {
    const before = await ourUploadFolders();
    const small = `# Harbour\n\n${paragraph(40)}\n`;
    const made = await foldersMadeDuring(async () => {
      const res = await put('mem-small', 'small.md', small, 'text/markdown');
      expect(res.statusCode, res.body).toBe(200);
    });
    expect(made).toEqual([]);
    const points = await pointsOf(h.index, 'mem-small');
    expect(points.length).toBeGreaterThan(0);
    expect(points.map((p) => p.content).join(' ')).toContain('Sentence 39 about the harbour crane');
    expect(points[0]!.meta).toMatchObject({ name: 'small.md', collection_name: 'kb-memory' });

    // Over 64 KiB: received into a file (removed afterwards), read the same way.
    const large = `# Harbour\n\n${paragraph(1600)}\n`;
    expect(Buffer.byteLength(large)).toBeGreaterThan(64 * 1024);
    const spilled = await foldersMadeDuring(async () => {
      const big = await put('mem-large', 'large.md', large, 'text/markdown');
      expect(big.statusCode, big.body).toBe(200);
    });
    expect(spilled).toHaveLength(1);
    const text = (await pointsOf(h.index, 'mem-large')).map((p) => p.content).join(' ');
    expect(text).toContain('Sentence 1599 about the harbour crane');
    expect(await ourUploadFolders()).toEqual(before);
  });

  it('a small file that is not plain text is read by its reader, named for it or not', async () => {
    const pdf = makePdf([[{ text: 'Crane manual' }, { text: 'The winch brake must be tested weekly.' }]]);
    expect(pdf.length).toBeLessThan(64 * 1024);
    for (const [fileId, name] of [
      ['mem-pdf', 'manual.pdf'],
      ['mem-pdf-as-txt', 'manual.txt'],
    ] as const) {
      const res = await put(fileId, name, pdf);
      expect(res.statusCode, res.body).toBe(200);
      const text = (await pointsOf(h.index, fileId)).map((p) => p.content).join(' ');
      expect(text).toContain('The winch brake must be tested weekly.');
    }
  });

  it('the size limit holds past the bytes kept in memory: 413, nothing stored, no folder left', async () => {
    const before = await ourUploadFolders();
    const over = `# Harbour\n\n${paragraph(6000)}\n`;
    expect(Buffer.byteLength(over)).toBeGreaterThan(256 * 1024);
    const res = await put('mem-over', 'over.md', over, 'text/markdown');
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
    expect(await pointsOf(h.index, 'mem-over')).toEqual([]);
    expect(await ourUploadFolders()).toEqual(before);
  });

  it('a corrupt small file fails with its reader`s error, as from a file', async () => {
    const res = await put('mem-bad-docx', 'broken.docx', Buffer.from('PK\u0003\u0004 not really a zip'));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ status: false, code: 'EXTRACTION_FAILED' });
    expect(await pointsOf(h.index, 'mem-bad-docx')).toEqual([]);
  });
});
