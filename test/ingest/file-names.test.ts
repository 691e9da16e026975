import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncFolder } from '../../src/embedded/folder-sync.js';
import { AUTH } from '../helpers/app.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { type Harness, multipartBody, startIngest } from './helpers/harness.js';

/*
 * Control characters in a file's name (issue #31): the multipart part's own filename, which no form
 * field vouches for, and a folder's file names are refused with 400 naming where the name came from,
 * like the `filename` form field already was — a NUL, \x01, or a terminal escape sequence.
 */
let h: Harness;
const newDir = tempDirs('kilde-file-names-');
beforeAll(async () => {
  h = await startIngest();
});
afterAll(async () => {
  await h?.close();
});

const BAD: Array<[string, string, string]> = [
  ['NUL', 'report\u0000.md', 'U+0000 at position 6'],
  ['\\x01', 'a\u0001b.md', 'U+0001 at position 1'],
  ['an ESC sequence', 'x\u001b[31mred.md', 'U+001B at position 1'],
];

const fields = { file_id: 'f1', collection_name: 'kb-names', user_id: 'u1' };

async function send(method: 'PUT' | 'POST', url: string, name: string, extra: Record<string, string> = {}) {
  const { body, headers } = multipartBody({ ...fields, ...extra }, { name, content: '# Hi\n\nText.\n' });
  return h.app.inject({ method, url, headers: { ...AUTH, ...headers }, payload: body });
}

describe("a multipart file part's own filename", () => {
  it.each(BAD)('with %s: 400 on ingest, extract and job submission', async (_what, name, at) => {
    for (const [method, url] of [
      ['PUT', '/api/v1/ingest'],
      ['POST', '/api/v1/extract'],
      ['POST', '/api/v1/jobs'],
    ] as const) {
      const res = await send(method, url, name);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ code: 'INVALID_REQUEST' });
      expect(JSON.stringify(res.json())).toContain(
        `Invalid request: the file part's filename must not contain control characters (${at})`,
      );
    }
  });

  it('is refused even when a clean `filename` field is given beside it', async () => {
    const res = await send('PUT', '/api/v1/ingest', 'x\u001b]0;title\u0007.md', { filename: 'clean.md' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/the file part's filename must not contain control characters/);
  });

  it('a clean name still ingests', async () => {
    const res = await send('PUT', '/api/v1/ingest', 'clean name.md');
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('the X-Filename header of PUT /process', () => {
  it.each(['report%00.md', 'a%01b.md', 'x%1B%5B31mred.md'])(
    '%s (URL-encoded) is refused with 400',
    async (name) => {
      const res = await h.app.inject({
        method: 'PUT',
        url: '/process',
        headers: { ...AUTH, 'x-filename': name, 'content-type': 'text/markdown' },
        payload: '# Hi\n\nText.\n',
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.body).toContain('X-Filename must not contain control characters');
    },
  );
});

describe('folder sync', () => {
  it('fails a file whose name holds a control character, alone; the others go in', async () => {
    const dir = await newDir();
    await mkdir(join(dir, 'docs'));
    await writeFile(join(dir, 'docs', 'fine.md'), '# Fine\n\nA fine file.\n');
    await writeFile(join(dir, 'docs', 'bad\u001b[2J.md'), '# Bad\n\nClears your screen.\n');
    const { service, index } = h.part.pipeline();
    const result = await syncFolder({
      service,
      index,
      files: [
        { path: join(dir, 'docs', 'fine.md'), relative: 'docs/fine.md' },
        { path: join(dir, 'docs', 'bad\u001b[2J.md'), relative: 'docs/bad\u001b[2J.md' },
      ],
      collection: 'kb-sync',
      userId: 'u1',
      manifestPath: join(dir, 'manifest.json'),
      log: pino({ level: 'silent' }),
    });
    expect(result.ingested).toBe(1);
    expect(result.failed).toEqual([
      {
        file: 'docs/bad\u001b[2J.md',
        error: 'Invalid request: the file path must not contain control characters (U+001B at position 8)',
      },
    ]);
  });
});
