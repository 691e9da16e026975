import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileIdFor } from '../../src/index/identifiers.js';
import { legacyFileIdFor, resolveIdentities } from '../../src/ingest/file-identity.js';
import type { Job } from '../../src/ingest/jobs/job.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, startIngest } from './helpers/harness.js';

/**
 * One identity for a file (docs/api.md, "One identity for a file"): an upload named by its path
 * (the console, `kilde ingest --url`) gets `fileIdFor(collection, path)`, reuses the document a
 * browser's bare name ends, and keeps the ids older versions gave (the CLI's folder-relative name,
 * the console's raw name), each claimed by one file only.
 */
let h: Harness;

beforeAll(async () => {
  h = await startIngest({ KEEP_VERSIONS: '3' });
});
afterAll(() => h?.close());

async function put(fields: Record<string, string>, name: string, text: string) {
  const { body, headers } = multipartBody(
    { filename: name, user_id: 'u1', ...fields },
    { name, content: text, type: 'text/plain' },
  );
  const res = await h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
}

/** What the console sends: the dropped name as `path`, no file_id, through the jobs API. */
async function consoleUpload(collection: string, path: string, text: string): Promise<Job> {
  const name = path.split('/').at(-1) ?? path;
  const { body, headers } = multipartBody(
    { path, collection_name: collection, user_id: 'console' },
    { name, content: text, type: 'text/plain' },
  );
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/v1/jobs',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(202);
  const job = res.json() as Job;
  for (;;) {
    const now = (
      await h.app.inject({ method: 'GET', url: `/api/v1/jobs/${job.job_id}`, headers: AUTH })
    ).json() as Job;
    if (now.state === 'done' || now.state === 'failed') return now;
    await new Promise((r) => setImmediate(r));
  }
}

async function documents(collection: string) {
  const res = await h.app.inject({
    method: 'GET',
    url: `/api/v1/collections/${encodeURIComponent(collection)}/documents`,
    headers: AUTH,
  });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { documents: { file_id: string; chunks: number }[] }).documents;
}

async function versions(fileId: string, collection: string) {
  const res = await h.app.inject({
    method: 'GET',
    url: `/api/v1/documents/${fileId}/versions?collection_name=${encodeURIComponent(collection)}`,
    headers: AUTH,
  });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { versions: { source: string | null }[] }).versions;
}

describe('one identity for a file', () => {
  it('a console upload of a file the CLI ingested is a new version of it, not a second document', async () => {
    // The CLI (--url) names the file by its path under its root.
    await put(
      { path: 'proj/notes/readme.md', legacy_path: 'notes/readme.md', collection_name: 'ids' },
      'readme.md',
      'Herons wait in the marsh.',
    );
    const [cli] = await documents('ids');
    expect(cli?.file_id).toBe(fileIdFor('ids', 'proj/notes/readme.md'));
    // The browser knows only the dropped name.
    const job = await consoleUpload('ids', 'readme.md', 'Herons wait in the marsh at dawn.');
    expect(job.state).toBe('done');
    expect(job.file_id).toBe(cli?.file_id);
    const docs = await documents('ids');
    expect(docs.map((d) => d.file_id)).toEqual([cli?.file_id]);
    expect(await versions(cli!.file_id, 'ids')).toHaveLength(2);
  });

  it('keeps two same-named files of different folders apart, and a bare name matching both is a 409', async () => {
    await put(
      { path: 'a/notes/readme.md', collection_name: 'folders' },
      'readme.md',
      'Alpha notes about ferries.',
    );
    await put(
      { path: 'b/notes/readme.md', collection_name: 'folders' },
      'readme.md',
      'Beta notes about trains.',
    );
    expect(await documents('folders')).toHaveLength(2);
    const { body, headers } = multipartBody(
      { path: 'readme.md', collection_name: 'folders', user_id: 'console' },
      { name: 'readme.md', content: 'which one?', type: 'text/plain' },
    );
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toContain('a/notes/readme.md');
    expect(await documents('folders')).toHaveLength(2);
  });

  it('reuses the id Kilde 0.x gave a CLI file, for the one file that claims it', async () => {
    // Kilde 0.x: file_id = hash(collection, folder-name/path), source = the same name.
    const legacy = fileIdFor('old', 'notes/readme.md');
    await put({ file_id: legacy, collection_name: 'old' }, 'readme.md', 'Old ferry notes.');
    // Today's CLI names it from its root; a/notes is the folder it was ingested from then.
    await put(
      { path: 'a/notes/readme.md', legacy_path: 'notes/readme.md', collection_name: 'old' },
      'readme.md',
      'New ferry notes.',
    );
    expect((await documents('old')).map((d) => d.file_id)).toEqual([legacy]);
    expect(await versions(legacy, 'old')).toHaveLength(2);
    // b/notes had the same 0.x name; the document is a/notes's now, so b/notes gets its own.
    await put(
      { path: 'b/notes/readme.md', legacy_path: 'notes/readme.md', collection_name: 'old' },
      'readme.md',
      'Train notes.',
    );
    const ids = (await documents('old')).map((d) => d.file_id).sort();
    expect(ids).toEqual([legacy, fileIdFor('old', 'b/notes/readme.md')].sort());
    // And a/notes keeps finding its document.
    await put(
      { path: 'a/notes/readme.md', legacy_path: 'notes/readme.md', collection_name: 'old' },
      'readme.md',
      'Newest ferry notes.',
    );
    expect(await versions(legacy, 'old')).toHaveLength(3);
    expect(await documents('old')).toHaveLength(2);
  });

  it('reuses the raw name an older console gave as the file_id', async () => {
    await put({ file_id: 'guide.md', collection_name: 'console-old' }, 'guide.md', 'The old guide.');
    const job = await consoleUpload('console-old', 'guide.md', 'The new guide.');
    expect(job.file_id).toBe('guide.md');
    expect(await documents('console-old')).toHaveLength(1);
  });

  it('a CLI ingest of a file first uploaded in the console is a new version of it', async () => {
    const job = await consoleUpload('tails', 'manual.md', 'The manual, uploaded by hand.');
    expect(job.state).toBe('done');
    // The CLI names it by its full path; the console's document carries a tail of it.
    await put(
      { path: 'proj/docs/manual.md', legacy_path: 'docs/manual.md', collection_name: 'tails' },
      'manual.md',
      'The manual, ingested by the CLI.',
    );
    expect((await documents('tails')).map((d) => d.file_id)).toEqual([job.file_id]);
    expect(await versions(job.file_id, 'tails')).toHaveLength(2);
    // Claimed: another file ending in the same name is a document of its own.
    await put(
      { path: 'other/docs/manual.md', legacy_path: 'docs/manual.md', collection_name: 'tails' },
      'manual.md',
      'Another manual.',
    );
    expect(await documents('tails')).toHaveLength(2);
  });

  it('gives a former id to one file of a pass only', async () => {
    const legacy = legacyFileIdFor('pass', 'notes/readme.md');
    await put({ file_id: legacy, collection_name: 'pass' }, 'readme.md', 'Old notes.');
    const request = (path: string) => ({
      collection: 'pass',
      path,
      legacy: [{ fileId: legacy, sources: ['notes/readme.md', 'readme.md'] }],
      tails: true,
    });
    const ids = await resolveIdentities(h.index, 'pass', [
      request('a/notes/readme.md'),
      request('b/notes/readme.md'),
    ]);
    expect(ids).toEqual([
      { fileId: legacy, source: 'a/notes/readme.md' },
      { fileId: fileIdFor('pass', 'b/notes/readme.md'), source: 'b/notes/readme.md' },
    ]);
  });
});
