import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH } from '../helpers/app.js';
import { type Harness, pointsOf, startIngest, uploadFile } from './helpers/harness.js';

/**
 * Deleting from the knowledge API (docs/api.md): a document of a collection and a whole collection,
 * kept versions included, and per-tenant keys reaching only their own collections.
 */
const TENANT = 'tenant-key-for-delete-tests-0001';
const TENANT_AUTH = { authorization: `Bearer ${TENANT}` };
let h: Harness;

beforeAll(async () => {
  h = await startIngest({
    KEEP_VERSIONS: '2',
    API_KEYS: JSON.stringify({ [TENANT]: { collections: ['mine'], name: 'tenant' } }),
  });
});
afterAll(() => h?.close());

const ingest = (fileId: string, collection: string, text: string) =>
  uploadFile(
    h.app,
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: collection, user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );

const del = (url: string, headers: Record<string, string> = AUTH) =>
  h.app.inject({ method: 'DELETE', url, headers });

describe('DELETE in the knowledge API', () => {
  it('deletes a document of a collection with its kept versions; another tenant cannot', async () => {
    await ingest('heron', 'mine', 'Herons wait in the marsh.');
    await ingest('heron', 'mine', 'Herons wait in the marsh at dawn.');
    await ingest('crane', 'theirs', 'Cranes dance in the field.');
    // The tenant's key does not reach another collection: answered like one that does not exist.
    expect((await del('/api/v1/collections/theirs/documents/crane', TENANT_AUTH)).statusCode).toBe(404);
    expect(await h.index.count({ fileId: 'crane', chunksOnly: true })).toBeGreaterThan(0);
    // A document that is not in the named collection is a 404, and nothing goes.
    expect((await del('/api/v1/collections/mine/documents/crane', TENANT_AUTH)).statusCode).toBe(404);
    const res = await del('/api/v1/collections/mine/documents/heron', TENANT_AUTH);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: true, collection_name: 'mine', file_id: 'heron' });
    expect(res.json().chunks_deleted).toBeGreaterThan(0);
    // Every point of the file, the kept version and the ledger included.
    expect(await h.index.count({ fileId: 'heron' })).toBe(0);
    expect(await pointsOf(h.index, 'crane')).not.toHaveLength(0);
  });

  it('deletes a collection and every document in it, and only with a key that reaches it', async () => {
    await ingest('a', 'mine', 'Alpha text about boats.');
    await ingest('b', 'mine', 'Beta text about trains.');
    expect((await del('/api/v1/collections/theirs', TENANT_AUTH)).statusCode).toBe(404);
    const res = await del('/api/v1/collections/mine', TENANT_AUTH);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: true, collection_name: 'mine', documents_deleted: 2 });
    expect(await h.index.count({ collectionNames: ['mine'] })).toBe(0);
    expect(await h.index.count({ fileId: 'a' })).toBe(0);
    const list = await h.app.inject({ method: 'GET', url: '/api/v1/collections', headers: AUTH });
    expect((list.json() as { collections: { name: string }[] }).collections.map((c) => c.name)).toEqual([
      'theirs',
    ]);
    expect((await del('/api/v1/collections/mine')).statusCode).toBe(404);
  });
});
