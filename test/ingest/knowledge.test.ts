import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StoredPoint } from '../../src/index/contract.js';
import { openIndex } from '../../src/index/open.js';
import type { VectorIndex } from '../../src/index/store.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { AUTH } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { type RetrieveHarness, startRetrieve } from '../retrieve/helpers/retrieve.js';
import { type Harness, multipartBody, startIngest } from './helpers/harness.js';

/**
 * Versions with rollback and the listings, over HTTP on LanceDB and on the (OpenAPI-validated)
 * Qdrant fake, with `POST /search` of a retrieve service on the same index: a re-ingest keeps the
 * replaced version out of every tenant, a restore makes it what search returns, retention deletes
 * beyond KEEP_VERSIONS, delete removes kept versions too.
 */
const WORDS: Record<string, string> = {
  v1: 'walrus',
  v2: 'pelican',
  v3: 'axolotl',
  v4: 'narwhal',
};
const DOC = (tag: string) =>
  Array.from(
    { length: 6 },
    (_, i) => `Paragraph ${i} of the ${WORDS[tag]} handbook explains rule ${i} about the ${WORDS[tag]}.`,
  ).join(' ');
const ENV = {
  CHUNK_SPLIT_BY: 'word',
  CHUNK_SIZE: '20',
  CHUNK_OVERLAP: '2',
  INGEST_SWEEP_INTERVAL: '0',
  KEEP_VERSIONS: '2',
};

let qdrant: QdrantFake;
/** Faults at the network boundary to Qdrant: the next N moves (set_payload) or `committed` records fail. */
const faults: { setPayload: number; committed: number; dieAfter: string | undefined; dead: boolean } = {
  setPayload: 0,
  committed: 0,
  dieAfter: undefined,
  dead: false,
};
const faultyFetch: typeof fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  const fail = () =>
    new Response(JSON.stringify({ status: { error: 'Service unavailable' }, time: 0 }), { status: 503 });
  // "The process dies" after the first request whose body holds the marker: nothing after it lands.
  if (faults.dead) throw new TypeError('fetch failed: the process is gone');
  if (faults.dieAfter !== undefined && String(init?.body ?? '').includes(faults.dieAfter)) {
    faults.dead = true;
    return fetch(input, init);
  }
  if (url.includes('/points/payload') && faults.setPayload > 0) {
    faults.setPayload--;
    return fail();
  }
  if (init?.method === 'PUT' && String(init.body).includes('kilde:committed') && faults.committed > 0) {
    faults.committed--;
    return fail();
  }
  return fetch(input, init);
};
beforeAll(async () => {
  qdrant = await startQdrantFake();
});
afterAll(async () => {
  await qdrant?.close();
});

describe.each(['lancedb', 'qdrant'] as const)('%s: versions, restore, listings', (engine) => {
  const open: { close(): Promise<void> }[] = [];
  let dir: string;
  let index: VectorIndex;
  let ingest: Harness;
  let retrieve: RetrieveHarness;
  const clock = new ManualClock({ start: Date.UTC(2026, 0, 1) });
  const collection = `knowledge_${engine}_${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kilde-knowledge-'));
    const uri = engine === 'lancedb' ? join(dir, 'lancedb') : qdrant.url;
    const env = { ...ENV, VECTORDB_URI: uri, VECTORDB_INDEX: collection };
    index = await openIndex(
      { uri, collection, timeoutMs: 10_000, sparse: true, language: 'english' },
      { log: pino({ level: 'silent' }), fetch: faultyFetch },
    );
    await index.ensureCollection();
    ingest = await startIngest(env, { dataDir: dir, index, clock });
    retrieve = await startRetrieve({ ...env, KILDE_DATA_DIR: dir, EMBEDDING_PROVIDER: 'none' }, { index });
    open.push(index, ingest, retrieve);
  });
  afterAll(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    if (engine === 'qdrant') expect(qdrant.violations).toEqual([]);
  });

  const put = async (fileId: string, tag: string, coll = 'handbooks') => {
    clock.advance(60_000);
    const { body, headers } = multipartBody(
      { file_id: fileId, collection_name: coll, user_id: 'u1' },
      { name: `${tag}.txt`, content: DOC(tag) },
    );
    const res = await ingest.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { chunks_count: number };
  };
  const get = async (url: string) => {
    const res = await ingest.app.inject({ method: 'GET', url, headers: AUTH });
    return { status: res.statusCode, json: res.json() };
  };
  const restore = async (fileId: string, version: string, body?: unknown) => {
    const res = await ingest.app.inject({
      method: 'POST',
      url: `/api/v1/documents/${fileId}/versions/${version}/restore`,
      headers: AUTH,
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, json: res.json() };
  };
  /**
   * The chunks `POST /search` returns for a word from the handbooks collection that contain it (a
   * small collection also answers with its opening chunks when nothing matches).
   */
  const search = async (word: string) => {
    const res = await retrieve.search({ queries: [word], collection_names: ['handbooks'], k: 20 });
    expect(res.status).toBe(200);
    return (res.json.documents[0] as string[]).filter((d) => d.includes(word));
  };
  /** Every stored point whose meta.collection_name is the tenant: what the reference service filters on. */
  const referenceView = async (tenant: string): Promise<StoredPoint[]> => {
    const out: StoredPoint[] = [];
    let cursor: string | undefined;
    do {
      const page = await index.scroll(
        { collectionNames: [tenant] },
        { limit: 500, ...(cursor ? { cursor } : {}) },
      );
      out.push(...page.points);
      cursor = page.next;
    } while (cursor);
    return out;
  };

  it('keeps replaced versions invisible, lists them, restores one atomically, prunes beyond KEEP_VERSIONS', async () => {
    const first = await put('doc-1', 'v1');
    expect(await search('walrus')).toHaveLength(first.chunks_count);

    await put('doc-1', 'v2');
    // The replaced version is kept but out of the tenant: neither Kilde's search nor a reader
    // filtering on meta.collection_name (the reference service) can see it.
    expect(await search('walrus')).toEqual([]);
    expect((await search('pelican')).length).toBeGreaterThan(0);
    const tenant = await referenceView('handbooks');
    expect(new Set(tenant.map((p) => p.content.includes('walrus')))).toEqual(new Set([false]));
    if (engine === 'qdrant') {
      const raw = (await qdrant.points(collection)).filter(
        (p) => (p.payload.meta as { collection_name: string }).collection_name === 'handbooks',
      );
      expect(raw.some((p) => String(p.payload.content).includes('walrus'))).toBe(false);
    }

    const listed = await get('/api/v1/documents/doc-1/versions');
    expect(listed.status).toBe(200);
    expect(listed.json.collection_name).toBe('handbooks');
    expect(listed.json.versions.map((v: { live: boolean }) => v.live)).toEqual([true, false]);
    const [live, kept] = listed.json.versions;
    expect(live.written_at).toBe(new Date(Date.UTC(2026, 0, 1) + 120_000).toISOString());
    expect(kept.written_at).toBe(new Date(Date.UTC(2026, 0, 1) + 60_000).toISOString());
    expect(kept.chunks).toBe(first.chunks_count);
    expect(kept.source).toBe('v1.txt');
    expect(kept.content_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(kept.content_hash).not.toBe(live.content_hash);

    // Restore: v1 is what search returns again, v2 is kept in its place.
    const restored = await restore('doc-1', kept.version);
    expect(restored.status, JSON.stringify(restored.json)).toBe(200);
    expect(restored.json).toEqual({
      status: true,
      file_id: 'doc-1',
      collection_name: 'handbooks',
      version: kept.version,
      chunks_count: first.chunks_count,
    });
    expect(await search('walrus')).toHaveLength(first.chunks_count);
    expect(await search('pelican')).toEqual([]);
    const after = (await get('/api/v1/documents/doc-1/versions')).json.versions;
    expect(after.map((v: { version: string; live: boolean }) => [v.version, v.live])).toEqual([
      [kept.version, true],
      [live.version, false],
    ]);
    // The restored version keeps the time it was first written.
    expect(after[0].written_at).toBe(kept.written_at);
    expect(after[0].content_hash).toBe(kept.content_hash);
    // Never two live versions: the tenant holds exactly the restored one.
    expect(new Set((await referenceView('handbooks')).map((p) => p.meta.ingest_version))).toEqual(
      new Set([kept.version]),
    );

    // Restoring the live version changes nothing; an unknown one is 404 VERSION_NOT_FOUND.
    expect((await restore('doc-1', kept.version, { collection_name: 'handbooks' })).status).toBe(200);
    const missing = await restore('doc-1', 'no-such-version');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ status: false, code: 'VERSION_NOT_FOUND' });

    // Retention: with KEEP_VERSIONS=2, after two more ingests only the two newest replaced stay.
    await put('doc-1', 'v3');
    await put('doc-1', 'v4');
    const versions = (await get('/api/v1/documents/doc-1/versions')).json.versions as {
      version: string;
      live: boolean;
      source: string;
    }[];
    expect(versions.map((v) => [v.source, v.live])).toEqual([
      ['v4.txt', true],
      ['v3.txt', false],
      ['v1.txt', false],
    ]);
    expect(await index.count({ fileId: 'doc-1', reserved: 'kept', ingestVersion: live.version })).toBe(0);
    expect(await index.count({ fileId: 'doc-1', reserved: 'retired' })).toBe(2);
    expect(await search('pelican')).toEqual([]);
    expect(await search('axolotl')).toEqual([]);
  });

  it('lists collections and pages through documents with a cursor', async () => {
    for (const id of ['a-1', 'a-2', 'a-3', 'a-4', 'a-5']) await put(id, 'v2', 'atlas');
    const cols = await get('/api/v1/collections');
    expect(cols.status).toBe(200);
    const atlas = cols.json.collections.find((c: { name: string }) => c.name === 'atlas');
    expect(atlas).toMatchObject({ name: 'atlas', files: 5 });
    expect(atlas.chunks).toBe(await index.count({ collectionNames: ['atlas'] }));
    expect(atlas.last_ingest).toBe(clock.now() && new Date(clock.now()).toISOString());
    // Reserved tenants (staging, ledger, kept versions) are never listed.
    for (const c of cols.json.collections) expect(c.name).not.toMatch(/kilde/);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const page = await get(`/api/v1/collections/atlas/documents?limit=2${q}`);
      expect(page.status).toBe(200);
      expect(page.json.documents.length).toBeLessThanOrEqual(2);
      for (const d of page.json.documents) {
        seen.push(d.file_id);
        expect(d).toMatchObject({ name: 'v2.txt', languages: ['en'], engine: 'inprocess' });
        expect(d.chunks).toBeGreaterThan(0);
        expect(d.live_version).toMatch(/^[0-9a-f.]+$/);
        expect(d.written_at).toMatch(/^2026-01-01T/);
      }
      cursor = page.json.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen.sort()).toEqual(['a-1', 'a-2', 'a-3', 'a-4', 'a-5']);
    expect(pages).toBe(3);

    const bad = await get('/api/v1/collections/atlas/documents?limit=0');
    expect(bad.status).toBe(422);
    const junk = await get('/api/v1/collections/atlas/documents?cursor=%E2%9C%97not-a-cursor');
    expect([200, 400]).toContain(junk.status);
  });

  it.runIf(engine === 'qdrant')(
    'a restore that fails before its version is visible keeps the live one',
    async () => {
      await put('doc-f', 'v1');
      await put('doc-f', 'v2');
      const before = (await get('/api/v1/documents/doc-f/versions')).json.versions;
      faults.setPayload = 1;
      const failed = await restore('doc-f', before[1].version);
      expect(failed.status).toBe(502);
      expect(failed.json).toMatchObject({ status: false, code: 'VECTORDB_WRITE_FAILED' });
      expect((await get('/api/v1/documents/doc-f/versions')).json.versions).toEqual(before);
      expect(await index.count({ fileId: 'doc-f', reserved: 'writing' })).toBe(0);
      const live = new Set(
        (await referenceView('handbooks'))
          .filter((p) => p.meta.file_id === 'doc-f')
          .map((p) => p.meta.ingest_version),
      );
      expect(live).toEqual(new Set([before[0].version]));
    },
  );

  it.runIf(engine === 'qdrant')(
    'the version sweep finishes a restore interrupted after its move',
    async () => {
      await put('doc-s', 'v1');
      await put('doc-s', 'v2');
      const [v2, v1] = (await get('/api/v1/documents/doc-s/versions')).json.versions;
      // The move succeeds; both tries to record it fail, so the replaced version is not retired yet.
      faults.committed = 2;
      expect((await restore('doc-s', v1.version)).status).toBe(200);
      expect(await index.count({ fileId: 'doc-s', reserved: 'writing' })).toBe(1);
      const report = await ingest.part.pipeline().service.sweepVersions(0);
      expect(report).toMatchObject({ finished: 1 });
      const after = (await get('/api/v1/documents/doc-s/versions')).json.versions;
      expect(after.map((v: { version: string; live: boolean }) => [v.version, v.live])).toEqual([
        [v1.version, true],
        [v2.version, false],
      ]);
      expect(await index.count({ fileId: 'doc-s', reserved: 'writing' })).toBe(0);
      // The restored version keeps the time it was first written, also when the sweep finished it.
      expect(after[0].written_at).toBe(v1.written_at);
      expect(await search('walrus')).not.toEqual([]);
      const live = new Set(
        (await referenceView('handbooks'))
          .filter((p) => p.meta.file_id === 'doc-s')
          .map((p) => p.meta.ingest_version),
      );
      expect(live).toEqual(new Set([v1.version]));
    },
  );

  it.runIf(engine === 'qdrant').each([
    ['after recording the kept version, before moving it', 'kilde:retired'],
    ['after moving the kept version, before clearing the writing entry', 'kilde:kept'],
  ])('a retirement interrupted %s is finished by the sweep', async (_when, marker) => {
    const fileId = `doc-c-${marker.slice(6)}`;
    await put(fileId, 'v1');
    faults.dieAfter = marker;
    await put(fileId, 'v2');
    expect(faults.dead).toBe(true);
    // A new process: the network works again, nothing is in flight.
    faults.dead = false;
    faults.dieAfter = undefined;
    expect(await ingest.part.pipeline().service.sweepVersions(0)).toMatchObject({ finished: 1, removed: 0 });
    const versions = (await get(`/api/v1/documents/${fileId}/versions`)).json.versions;
    expect(versions.map((v: { source: string; live: boolean }) => [v.source, v.live])).toEqual([
      ['v2.txt', true],
      ['v1.txt', false],
    ]);
    const live = (await referenceView('handbooks')).filter((p) => p.meta.file_id === fileId);
    expect(new Set(live.map((p) => p.meta.ingest_version))).toEqual(new Set([versions[0].version]));
    expect(await index.count({ fileId, reserved: 'writing' })).toBe(0);
    expect(await index.count({ fileId, reserved: 'retired' })).toBe(1);
  });

  it('delete removes every version, the kept ones and their ledger too', async () => {
    await put('doc-d', 'v1');
    await put('doc-d', 'v2');
    expect(await index.count({ fileId: 'doc-d', reserved: 'kept' })).toBeGreaterThan(0);
    const res = await ingest.app.inject({ method: 'DELETE', url: '/api/v1/documents/doc-d', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(await index.count({ fileId: 'doc-d' })).toBe(0);
    expect((await get('/api/v1/documents/doc-d/versions')).status).toBe(404);
    expect((await restore('doc-d', 'whatever')).json).toMatchObject({ code: 'VERSION_NOT_FOUND' });
  });
});

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('fenced versions (REDIS_URL): a restored older version is retired by the next ingest'),
  () => {
    let redis: RedisServer;
    let h: Harness;
    beforeAll(async () => {
      redis = await startRedis();
      h = await startIngest({ ...ENV, REDIS_URL: redis.url });
    });
    afterAll(async () => {
      await h?.close();
      await redis?.stop();
    });

    it('restores under the lease, survives the sweep, and the next ingest keeps it in turn', async () => {
      const put = async (tag: string) => {
        const { body, headers } = multipartBody(
          { file_id: 'fenced', collection_name: 'handbooks', user_id: 'u1' },
          { name: `${tag}.txt`, content: DOC(tag) },
        );
        const res = await h.app.inject({
          method: 'PUT',
          url: '/api/v1/ingest',
          headers: { ...AUTH, ...headers },
          payload: body,
        });
        expect(res.statusCode, res.body).toBe(200);
      };
      const versions = async () => {
        const res = await h.app.inject({
          method: 'GET',
          url: '/api/v1/documents/fenced/versions',
          headers: AUTH,
        });
        return (res.json() as { versions: { version: string; live: boolean; source: string }[] }).versions;
      };
      await put('v1');
      await put('v2');
      const [, v1] = await versions();
      const res = await h.app.inject({
        method: 'POST',
        url: `/api/v1/documents/fenced/versions/${v1!.version}/restore`,
        headers: AUTH,
        payload: { collection_name: 'handbooks' },
      });
      expect(res.statusCode, res.body).toBe(200);
      // The restored version has an older fence than the one it replaced: the sweep must not
      // take it for a superseded write.
      expect(await h.part.pipeline().service.sweepVersions(0)).toEqual({
        finished: 0,
        removed: 0,
        waiting: 0,
      });
      expect((await versions()).map((v) => [v.source, v.live])).toEqual([
        ['v1.txt', true],
        ['v2.txt', false],
      ]);
      await put('v3');
      expect((await versions()).map((v) => [v.source, v.live])).toEqual([
        ['v3.txt', true],
        ['v1.txt', false],
        ['v2.txt', false],
      ]);
    });
  },
);
