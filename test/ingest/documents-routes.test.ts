import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH } from '../helpers/app.js';
import { FIXTURES, type Harness, multipartBody, pointsOf, startIngest } from './helpers/harness.js';

const TEXT = Array.from({ length: 30 }, (_, i) => `Sentence number ${i} talks about topic ${i % 5}.`).join(
  ' ',
);

let h: Harness;
beforeAll(async () => {
  h = await startIngest({ CHUNK_SPLIT_BY: 'word', CHUNK_SIZE: '40', CHUNK_OVERLAP: '5' });
});
afterAll(() => h?.close());

async function upload(
  fileId: string,
  collection: string,
  content: string | Buffer = TEXT,
  name = 'notes.txt',
) {
  const { body, headers } = multipartBody(
    { file_id: fileId, collection_name: collection, user_id: 'u1' },
    { name, content },
  );
  const res = await h.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...AUTH, ...headers },
    payload: body,
  });
  expect(res.statusCode).toBe(200);
  return res.json() as { chunks_count: number };
}

describe('start-up', () => {
  it('logs lexical-only mode when EMBEDDING_PROVIDER=none', () => {
    expect(h.logs.lines.some((l) => /lexical-only mode/.test(String(l.msg)))).toBe(true);
  });

  it('is not ready until the pipeline is warm, then ready', async () => {
    const cold = await startIngest({}, { start: false });
    try {
      const res = await cold.app.inject({ url: '/health/ready' });
      expect(res.statusCode).toBe(503);
      expect(res.json().detail).toMatch(/ingest-pipeline: pipeline not warmed up yet/);
      const ingest = await cold.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: AUTH,
        payload: { s3_bucket: 'b', s3_key: 'k', file_id: 'f', collection_name: 'c', user_id: 'u' },
      });
      expect(ingest.statusCode).toBe(503);
      expect(ingest.json()).toMatchObject({ status: false, code: 'NOT_READY' });
      await cold.part.start?.();
      expect((await cold.app.inject({ url: '/health/ready' })).statusCode).toBe(200);
      expect((await cold.app.inject({ url: '/health' })).statusCode).toBe(200);
    } finally {
      await cold.close();
    }
  });
});

describe('DELETE /api/v1/documents/{file_id}', () => {
  it('removes every version in every collection and reports how many points went', async () => {
    const a = await upload('del-1', 'team-a');
    const b = await upload('del-1', 'team-b');
    await upload('keep-1', 'team-a');
    const res = await h.app.inject({ method: 'DELETE', url: '/api/v1/documents/del-1', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: true,
      file_id: 'del-1',
      chunks_deleted: a.chunks_count + b.chunks_count,
    });
    expect(await h.index.count({ fileId: 'del-1' })).toBe(0);
    expect(await h.index.count({ fileId: 'keep-1' })).toBeGreaterThan(0);
  });

  it('answers 0 for an unknown file_id', async () => {
    const res = await h.app.inject({ method: 'DELETE', url: '/api/v1/documents/never-seen', headers: AUTH });
    expect(res.json()).toEqual({ status: true, file_id: 'never-seen', chunks_deleted: 0 });
  });
});

describe('GET /api/v1/documents/{file_id}/chunks', () => {
  it('pages through the stored chunks with a cursor', async () => {
    const { chunks_count } = await upload('insp', 'file-insp');
    expect(chunks_count).toBeGreaterThan(3);
    const seen: number[] = [];
    let offset: string | undefined;
    do {
      const url = `/api/v1/documents/insp/chunks?limit=2${offset ? `&offset=${encodeURIComponent(offset)}` : ''}`;
      const res = await h.app.inject({ url, headers: AUTH });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({
        status: true,
        file_id: 'insp',
        limit: 2,
        stats: {
          total_chunks: chunks_count,
          extraction_engine: 'inprocess',
          languages: ['en'],
          name: 'notes.txt',
          collection_name: 'file-insp',
        },
      });
      expect(body.returned).toBe(body.chunks.length);
      for (const c of body.chunks) {
        expect(c).not.toHaveProperty('content');
        expect(c.meta.file_id).toBe('insp');
        expect(c.content_length).toBe(c.meta.char_end - c.meta.char_start);
        seen.push(c.split_id);
      }
      offset = body.next_offset;
    } while (offset);
    expect(seen.sort((x, y) => x - y)).toEqual(Array.from({ length: chunks_count }, (_, i) => i));
  });

  it('includes a preview or the full content on request', async () => {
    await upload('insp2', 'file-insp2');
    const points = await pointsOf(h.index, 'insp2');
    const full = (
      await h.app.inject({ url: '/api/v1/documents/insp2/chunks?include_content=full', headers: AUTH })
    ).json();
    const byId = new Map(
      full.chunks.map((c: { split_id: number; content: string }) => [c.split_id, c.content]),
    );
    for (const p of points) expect(byId.get(p.meta.split_id)).toBe(p.content);
    const preview = (
      await h.app.inject({ url: '/api/v1/documents/insp2/chunks?include_content=preview', headers: AUTH })
    ).json();
    for (const c of preview.chunks) expect(c.content.length).toBeLessThanOrEqual(200);
  });

  it.each(['limit=0', 'limit=1001', 'limit=x', 'include_content=yes', 'colour=red', 'offset=not-a-cursor'])(
    'rejects %s with 400',
    async (q) => {
      const res = await h.app.inject({ url: `/api/v1/documents/insp/chunks?${q}`, headers: AUTH });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('INVALID_REQUEST');
    },
  );

  it('answers 404 when ENABLE_INSPECTION_API is off, after checking the key', async () => {
    const off = await startIngest({ ENABLE_INSPECTION_API: 'false' }, { dataDir: h.dataDir });
    try {
      expect((await off.app.inject({ url: '/api/v1/documents/insp/chunks' })).statusCode).toBe(401);
      const res = await off.app.inject({ url: '/api/v1/documents/insp/chunks', headers: AUTH });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ status: false, code: 'NOT_FOUND' });
    } finally {
      await off.close();
    }
  });
});

describe('POST /api/v1/extract', () => {
  const probe = async (
    fields: Record<string, string>,
    name: string,
    content: Buffer | string,
    query = '',
  ) => {
    const { body, headers } = multipartBody(fields, { name, content });
    return h.app.inject({
      method: 'POST',
      url: `/api/v1/extract${query}`,
      headers: { ...AUTH, ...headers },
      payload: body,
    });
  };

  it('returns the raw documents of the configured engine', async () => {
    const res = await probe({}, 'table.html', await readFile(join(FIXTURES, 'table_06.html')));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ status: true, engine: 'inprocess', profile: null });
    expect(body.documents).toHaveLength(1);
    expect(body.documents[0].text).toMatch(/\|.*\|/);
    expect(body.documents[0].metadata.mime_type).toBe('text/html');
  });

  it('runs another concrete engine when asked', async () => {
    const res = await probe(
      { engine: 'pdf-inprocess' },
      'doc.docx',
      await readFile(join(FIXTURES, 'lorem_ipsum.docx')),
    );
    expect(res.json()).toMatchObject({ status: false, code: 'EXTRACTION_FAILED' });
    const ok = await probe(
      {},
      'a.pdf',
      await readFile(join(FIXTURES, 'multi_page.pdf')),
      '?engine=pdf-inprocess',
    );
    expect(ok.json()).toMatchObject({ status: true, engine: 'pdf-inprocess' });
  });

  it.each([
    [{ engine: 'auto' }, /routing mode/],
    // The service has no vision endpoint configured: the probe says which variable is missing.
    [{ engine: 'vision-llm' }, /Engine vision-llm is not usable: .*VISION_LLM_API_BASE_URL is required/],
    [{ engine: 'nope' }, /Unknown or unavailable engine/],
    [{ profile: 'diagram' }, /profile is accepted only by vision engines/],
    [{ colour: 'red' }, /unknown field/],
  ])('rejects %o with 400', async (fields, message) => {
    const res = await probe(fields, 'a.txt', 'hello');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      status: false,
      code: 'INVALID_REQUEST',
      error: expect.stringMatching(message),
    });
  });

  it('rejects a JSON body with 415', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/v1/extract',
      headers: AUTH,
      payload: { x: 1 },
    });
    expect(res.statusCode).toBe(415);
  });
});

describe('GET /metrics', () => {
  it('counts ingests by outcome and code, deletes, sizes and stage timings', async () => {
    await upload('m1', 'file-m1');
    await h.app.inject({ method: 'PUT', url: '/api/v1/ingest', headers: AUTH, payload: { nope: 1 } });
    await h.app.inject({ method: 'DELETE', url: '/api/v1/documents/m1', headers: AUTH });
    const text = (await h.app.inject({ url: '/metrics', headers: AUTH })).body;
    expect(text).toMatch(/ingest_requests_total\{outcome="success",code="OK"\} [1-9]/);
    expect(text).toMatch(/ingest_requests_total\{outcome="failure",code="INVALID_REQUEST"\} [1-9]/);
    expect(text).toMatch(/delete_requests_total\{outcome="success"\} [1-9]/);
    expect(text).toMatch(/ingest_duration_seconds_count\{outcome="success"\} [1-9]/);
    expect(text).toMatch(/ingest_chunks_per_document_count [1-9]/);
    expect(text).toMatch(/ingest_document_bytes_sum [1-9]/);
    for (const stage of ['convert', 'chunk', 'sparse', 'write']) {
      expect(text).toMatch(new RegExp(`pipeline_stage_duration_seconds_count\\{stage="${stage}"\\} [1-9]`));
    }
    // lexical-only: no dense stage ran
    expect(text).not.toMatch(/pipeline_stage_duration_seconds_count\{stage="dense"\}/);
  });
});
