import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { ingestText } from '../retrieve/helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from '../retrieve/helpers/retrieve.js';
import { type Harness, multipartBody, startIngest } from './helpers/harness.js';

/** One collection-name rule: what ingest stores, search can find; what search refuses, ingest refuses. */
let ingest: Harness;
let r: RetrieveHarness;

beforeAll(async () => {
  ingest = await startIngest();
  r = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
});
afterAll(async () => {
  await r?.close();
  await ingest?.close();
});

describe('collection names', () => {
  it.each(['Møde-noter v1.2', 'handbook.2024', 'отчёты', 'file-3f2a9c1e-8b7d-4c4e-9f0a-1b2c3d4e5f60'])(
    '"%s" is stored by ingest and found by search',
    async (name) => {
      // `file-…` collections belong to the file of that id.
      const fileId = name.startsWith('file-')
        ? name.slice(5)
        : `f-${Buffer.from(name).toString('hex').slice(0, 20)}`;
      await ingestText(ingest, fileId, name, 'The lighthouse keeper logs the fog.');
      const hits = await eventually(async () => {
        const { status, json } = await r.search({ queries: ['lighthouse fog'], collection_names: [name] });
        expect(status, JSON.stringify(json)).toBe(200);
        const found: string[] = json.documents[0];
        return found.length > 0 && found;
      }, 100);
      expect(hits[0]).toContain('lighthouse');
    },
  );

  it.each(['a/b', ' lead', 'trail ', '-dash-first', 'x'.repeat(129), 'tab\there'])(
    '%j is refused by both ingest (400) and search (422), naming the rule',
    async (name) => {
      const { body, headers } = multipartBody(
        { file_id: 'bad', collection_name: name, user_id: 'u1' },
        { name: 'bad.txt', content: 'text', type: 'text/plain' },
      );
      const put = await ingest.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      const search = await r.search({ queries: ['x'], collection_names: [name] });
      if (name.trim() !== name) {
        // Surrounding spaces are trimmed by ingest (a form field) and refused by search (JSON).
        expect(put.statusCode).toBe(200);
        expect(search.status).toBe(422);
        return;
      }
      expect(put.statusCode).toBe(400);
      // A control character (the tab) is refused as such, before the name rule is applied.
      expect(put.json().error).toMatch(/letters and digits of any script|control characters/);
      expect(search.status).toBe(422);
      expect(JSON.stringify(search.json)).toMatch(/letters and digits of any script/);
    },
  );

  it('an object-storage ingest is held to the same rule', async () => {
    const res = await ingest.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: AUTH,
      payload: { bucket: 'b', key: 'k.txt', file_id: 'f', collection_name: 'a:b', user_id: 'u' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: false, code: 'INVALID_REQUEST' });
  });
});
