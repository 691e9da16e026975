import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInprocessExtractor } from '../../src/extract/inprocess-engine.js';
import { pointId } from '../../src/index/contract.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FIXTURES, type Harness, multipartBody, startIngest } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

let ingest: Harness;
let retrieve: RetrieveHarness;
let pageTexts: string[];

beforeAll(async () => {
  ingest = await startIngest({ CHUNK_SPLIT_BY: 'markdown', CHUNK_SIZE: '120', CHUNK_OVERLAP: '0' });
  const path = join(FIXTURES, 'multi_page.pdf');
  const { body, headers } = multipartBody(
    { file_id: 'pdf-1', collection_name: 'file-pdf-1', user_id: 'u1' },
    { name: 'multi_page.pdf', content: await readFile(path), type: 'application/pdf' },
  );
  const res = await ingest.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
  const [doc] = await createInprocessExtractor().extract({ path, filename: 'multi_page.pdf' });
  pageTexts = (doc?.pages ?? []).map((p) => doc!.text.slice(p.start, p.end).replace(/\s+/g, ' '));
  await ingest.settle(); // the retrieval apps open their own index on the data directory
  retrieve = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
});

afterAll(async () => {
  await retrieve?.close();
  await ingest?.close();
});

describe('citations behind Open WebUI (page + 1 is the page it opens)', () => {
  it('answers a 0-based `page` and the 1-based `page_number` of the page the chunk is on', async () => {
    const { status, json } = await retrieve.search({
      queries: ['Word Perfect WordStar'],
      collection_names: ['file-pdf-1'],
      k: 5,
    });
    expect(status).toBe(200);
    const metas = json.metadatas[0] as Record<string, number | number[]>[];
    const docs = json.documents[0] as string[];
    expect(metas.length).toBeGreaterThan(0);
    for (const [i, meta] of metas.entries()) {
      expect(meta.page_number).toBe((meta.page as number) + 1);
      expect((meta.pages as number[])[0]).toBe(meta.page_number);
      // The opening words of the chunk are on the page Open WebUI links to (`#page=${page + 1}`).
      const opening = docs[i]!.replace(/^#+ /gm, '').replace(/\s+/g, ' ').trim().slice(0, 30);
      expect(pageTexts[meta.page as number]).toContain(opening);
    }
  });

  it('reads chunks written with 1-based `page` before this change as 0-based, without re-ingesting', async () => {
    await ingest.index.upsert([
      {
        id: pointId('legacy', 'v0', 0),
        content: 'Legacy chunk about carburettors on the third page.',
        meta: {
          collection_name: 'legacy-kb',
          collection_type: 'file',
          file_id: 'legacy',
          ingest_version: 'v0',
          split_id: 0,
          page: 3,
          pages: [3, 4],
        },
      },
    ]);
    // The retrieve process sees the other connection's write within about a second.
    const metas = await eventually(async () => {
      const { json } = await retrieve.search({ queries: ['carburettors'], collection_names: ['legacy-kb'] });
      const found: unknown[] = json.metadatas[0];
      return found.length > 0 && found;
    }, 100);
    expect(metas[0]).toMatchObject({ page: 2, page_number: 3, pages: [3, 4] });
  });
});
