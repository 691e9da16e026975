import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { type Harness, multipartBody, pointsOf, startIngest, versionsOf } from './helpers/harness.js';

/**
 * A client that goes away cancels its ingest before the new version is committed (issue #18 item
 * 5): the embedding request in flight is aborted, nothing of the new version is written and the
 * previous version stays. Over a real socket, because only a real socket can close.
 */
let embed: FakeEmbeddingsServer;
let h: Harness;
let base: URL;

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 8 });
  h = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    EMBEDDING_MODEL: 'fake-embed',
    EMBEDDING_DIM: '8',
    EMBEDDING_MAX_RETRIES: '0',
    CHUNK_SPLIT_BY: 'word',
    CHUNK_SIZE: '20',
    CHUNK_OVERLAP: '0',
  });
  base = new URL(await h.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(async () => {
  await h?.close();
  await embed?.close();
});

const DOC = (tag: string) =>
  Array.from({ length: 40 }, (_, i) => `Paragraph ${i} of the ${tag} edition explains a procedure.`).join(
    '\n\n',
  );

/** Until `what` has happened (no deadline of its own: the test's). */
async function until(_what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  await eventually(check);
}

describe('a client that disconnects mid-ingest', () => {
  it('cancels the run before commit: the previous version stays, nothing of the new one is written', async () => {
    const fields = { file_id: 'gone', collection_name: 'kb', user_id: 'u1' };
    const first = multipartBody(fields, { name: 'a.md', content: DOC('first') });
    const ok = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...first.headers },
      payload: first.body,
    });
    expect(ok.statusCode).toBe(200);
    const before = await pointsOf(h.index, 'gone');

    let release!: () => void;
    embed.always = { kind: 'held', until: new Promise<void>((r) => (release = r)) };
    const seen = embed.embeddingRequests().length;
    const second = multipartBody(fields, { name: 'a.md', content: DOC('second') });
    const req = request(new URL('/api/v1/ingest', base), {
      method: 'PUT',
      headers: { ...AUTH, ...second.headers, 'content-length': String(second.body.length) },
    });
    const closed = new Promise<void>((resolve) => req.on('error', () => resolve()).on('close', resolve));
    req.end(second.body);
    // The run is in its embedding stage; the client gives up.
    await until('the embedding request', () => embed.embeddingRequests().length > seen);
    req.destroy();
    await closed;
    await until('the cancelled run to end', () =>
      h.logs.lines.some((l) => String(l.msg).startsWith('ingest cancelled') && l.fileId === 'gone'),
    );
    release();
    embed.always = undefined;

    expect(await pointsOf(h.index, 'gone')).toEqual(before);
    expect(versionsOf(await pointsOf(h.index, 'gone'))).toHaveLength(1);
    expect(await h.index.count({ reserved: 'writing' })).toBe(0);
    expect(await h.index.count({ reserved: 'staging' })).toBe(0);
    // The file is not locked by the abandoned run.
    const third = multipartBody(fields, { name: 'a.md', content: DOC('third') });
    const after = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...third.headers },
      payload: third.body,
    });
    expect(after.statusCode).toBe(200);
    expect(versionsOf(await pointsOf(h.index, 'gone'))).toHaveLength(1);
  });
});
