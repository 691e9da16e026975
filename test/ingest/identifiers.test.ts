import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointId } from '../../src/index/contract.js';
import { identifierProblem } from '../../src/index/identifiers.js';
import { resolvedObject } from '../../src/ingest/object-store.js';
import { uploadsRoot } from '../../src/ingest/temp-dir.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, pointsOf, startIngest } from './helpers/harness.js';
import { type FakeS3, S3_KEYS, startS3 } from './helpers/s3.js';

/**
 * Requests that cannot corrupt state (issue #18 item 5): control characters in identifiers are
 * refused before anything is written; object references are judged on the path the endpoint
 * resolves; a missing object is the caller's error.
 */
// A private temp root for this worker, so the test sees exactly the upload folders it makes.
const privateTmp = await mkdtemp(join(tmpdir(), 'kilde-identifiers-'));
process.env.TMPDIR = privateTmp;

let s3: FakeS3;
let h: Harness;

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('uploads');
  await s3.createBucket('secret');
  await s3.put('uploads', 'u1/notes.md', '# Notes\n\nPlain words about waste collection.\n', 'text/markdown');
  await s3.put('secret', 'x.md', '# Secret\n\nThe payroll of every employee.\n', 'text/markdown');
  h = await startIngest({
    OBJECTSTORE_ENDPOINT: s3.endpoint,
    OBJECTSTORE_ACCESS_KEY: S3_KEYS.accessKeyId,
    OBJECTSTORE_SECRET_KEY: S3_KEYS.secretAccessKey,
    OBJECTSTORE_ALLOWED_BUCKETS: 'uploads',
  });
});
afterAll(async () => {
  await h?.close();
  await s3?.close();
  await rm(privateTmp, { recursive: true, force: true });
});

const CONTROL = ['\u0000', '\u0001', '\t', '\n', '\u001f', '\u007f', '\u0085', '\u009f'];
const good = { bucket: 'uploads', key: 'u1/notes.md', file_id: 'f1', collection_name: 'kb-1', user_id: 'u1' };

const putJson = (payload: Record<string, unknown>) =>
  h.app.inject({ method: 'PUT', url: '/api/v1/ingest', headers: AUTH, payload });

async function everything() {
  return h.index.count({});
}

describe('identifiers', () => {
  it('refuses a control character or lone surrogate anywhere in an identifier, naming field and position', () => {
    expect(identifierProblem('plain-id_1.2 with spaces, ÆØÅ and 🙂')).toBeUndefined();
    for (const c of CONTROL) {
      expect(identifierProblem(`ab${c}cd`)).toMatch(/control characters \(U\+[0-9A-F]{4} at position 2\)/);
    }
    expect(identifierProblem('ab\ud800')).toMatch(/lone surrogate U\+D800 at position 2/);
    expect(identifierProblem('\udc00')).toMatch(/lone surrogate/);
  });

  it('answers 400 before anything is written, for every identifier of a JSON ingest', async () => {
    const before = await everything();
    for (const field of ['file_id', 'collection_name', 'user_id', 'key', 'bucket', 'filename']) {
      for (const c of ['\u0000', '\u0001', '\n']) {
        const value = `${String(good[field as keyof typeof good] ?? 'name.md')}${c}x`;
        const res = await putJson({ ...good, [field]: value });
        expect(res.statusCode, `${field} with U+${c.codePointAt(0)}`).toBe(400);
        expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
        expect(res.json().error).toMatch(new RegExp(`${field} must not contain control characters`));
      }
    }
    expect(await everything()).toBe(before);
  });

  it('does not trim a tab or newline away: the identifier is refused, not silently changed', async () => {
    const res = await putJson({ ...good, file_id: '\tf1\n' });
    expect(res.statusCode).toBe(400);
    expect(await h.index.count({ fileId: 'f1' })).toBe(0);
  });

  it('answers 400 for a multipart ingest before the file is stored', async () => {
    const before = await everything();
    const { body, headers } = multipartBody(
      { file_id: 'mp\u0000', collection_name: 'kb-1', user_id: 'u1' },
      { name: 'notes.md', content: '# Notes\n\nSome text.\n' },
    );
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/file_id must not contain control characters \(U\+0000/);
    expect(await everything()).toBe(before);
    expect(await readdir(uploadsRoot()).catch(() => [])).toEqual([]);
  });

  it('still deletes rows an older version stored under a control-character id', async () => {
    const legacy = 'legacy\u0000id';
    await h.index.upsert([
      {
        id: pointId(legacy, 'v0', 0),
        content: 'an orphan from before the identifier rule',
        meta: {
          collection_name: 'kb-legacy',
          collection_type: 'file',
          file_id: legacy,
          ingest_version: 'v0',
          split_id: 0,
        },
      },
    ]);
    const res = await h.app.inject({
      method: 'DELETE',
      url: `/api/v1/documents/${encodeURIComponent(legacy)}`,
      headers: AUTH,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: true, file_id: legacy, chunks_deleted: 1 });
    expect(await h.index.count({ fileId: legacy })).toBe(0);
  });
});

describe('object references', () => {
  it('resolves paths the way a path-style endpoint does', () => {
    expect(resolvedObject('uploads', '../secret/x.md')).toEqual({ bucket: 'secret', key: 'x.md' });
    expect(resolvedObject('uploads', 'a/./b/../c.md')).toEqual({ bucket: 'uploads', key: 'a/c.md' });
    expect(resolvedObject('uploads', 'u1/notes.md')).toEqual({ bucket: 'uploads', key: 'u1/notes.md' });
  });

  it('answers 403 for a key that climbs into a bucket outside OBJECTSTORE_ALLOWED_BUCKETS', async () => {
    for (const key of ['../secret/x.md', 'u1/../../secret/x.md', './../secret/x.md']) {
      const res = await putJson({ ...good, file_id: 'trav', key });
      expect(res.statusCode, key).toBe(403);
      expect(res.json()).toEqual({
        status: false,
        error: 'Bucket secret is not allowed',
        code: 'INVALID_REQUEST',
      });
    }
    expect(await h.index.count({ fileId: 'trav' })).toBe(0);
  });

  it('answers 400 for a key that resolves to another key of an allowed bucket', async () => {
    for (const key of ['u1/../u1/notes.md', '/u1/notes.md', 'u1//notes.md', 'u1/./notes.md']) {
      const res = await putJson({ ...good, file_id: 'ambiguous', key });
      expect(res.statusCode, key).toBe(400);
      expect(res.json().error).toMatch(/key must not contain "\." or "\.\." segments/);
    }
    expect(await h.index.count({ fileId: 'ambiguous' })).toBe(0);
  });

  it('answers 400 for a bucket that is not a bucket name', async () => {
    for (const bucket of ['up/loads', '..', 'uploads/../secret', 'a b', '', 'x'.repeat(256)]) {
      const res = await putJson({ ...good, file_id: 'bad-bucket', bucket });
      expect(res.statusCode, bucket).toBe(400);
      expect(res.json().code).toBe('INVALID_REQUEST');
    }
  });

  it('answers 404 for a missing object and ingests a plain key', async () => {
    const missing = await putJson({ ...good, file_id: 'missing', key: 'u1/none.md' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({
      status: false,
      error: 'Could not fetch s3://uploads/u1/none.md: object not found',
      code: 'OBJECT_FETCH_FAILED',
    });
    const ok = await putJson({ ...good, file_id: 'plain' });
    expect(ok.statusCode).toBe(200);
    expect((await pointsOf(h.index, 'plain')).length).toBe(ok.json().chunks_count);
  });
});

describe('upload folders left by a crash', () => {
  it('are removed at start-up, except those of other live processes and requests in flight', async () => {
    const root = uploadsRoot();
    const dead = 2_147_483_000; // no such process
    const live = process.ppid;
    for (const name of [`${dead}-abc`, `${process.pid}-old`, `${live}-busy`, 'junk']) {
      await mkdir(join(root, name, 'inner'), { recursive: true });
      await writeFile(join(root, name, 'inner', 'source.pdf'), 'partial upload');
    }
    const again = await startIngest({}, { dataDir: h.dataDir });
    try {
      expect((await readdir(root)).sort()).toEqual([`${live}-busy`]);
      expect(again.logs.lines).toContainEqual(
        expect.objectContaining({ msg: 'removed stale upload folders', folders: 3 }),
      );
    } finally {
      await again.close();
      await rm(join(root, `${live}-busy`), { recursive: true, force: true });
    }
  });
});
