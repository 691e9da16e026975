import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { highlight, queryTerms, snippet } from '../../src/cli/render.js';
import { ConfigError, parseConfig } from '../../src/config/parse.js';
import { allSchema, resolveAllConfig } from '../../src/embedded/all-config.js';
import { KEY_FILE, loadOrCreateKey } from '../../src/embedded/api-key.js';
import { composeAll } from '../../src/embedded/compose.js';
import { syncFolder } from '../../src/embedded/folder-sync.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { fileIdFor } from '../../src/index/identifiers.js';
import { closedPort, FAKE_KEY, startFakeWeather } from '../fakes/weather.js';
import { logSink } from '../helpers/app.js';
import { tempDir } from './helpers.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startAll(env: Record<string, string>) {
  const tmp = await tempDir('kilde-all-');
  cleanups.push(tmp.remove);
  const config = parseConfig(allSchema, { API_KEY: 'k', KILDE_DATA_DIR: tmp.dir, ...env });
  const sink = logSink();
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'info' }, sink.stream);
  const all = await composeAll(config, log);
  const app: KildeApp = await buildApp(config, { logger: log, parts: all.parts });
  cleanups.push(() => app.close());
  await startParts(all.parts);
  return { all, app, logs: sink, dir: tmp.dir };
}

const AUTH = { authorization: 'Bearer k' };

describe('kilde serve all: config', () => {
  it('defaults to the embedded, offline settings', () => {
    const c = parseConfig(allSchema, { API_KEY: 'k' });
    expect(c).toMatchObject({
      EXTRACTION_ENGINE: 'inprocess',
      CHUNK_SPLIT_BY: 'markdown',
      ENABLE_SPARSE_EMBEDDINGS: true,
      ENABLE_HYBRID_SEARCH: true,
      SPARSE_LANGUAGE: 'english',
      KILDE_DATA_DIR: join(homedir(), '.kilde'),
      PORT: 8000,
    });
    expect(c.AGENT_API_BASE_URL).toBeUndefined();
    // Unset: an installed model's, else lexical-only (no model is passed here).
    expect(c.EMBEDDING_PROVIDER).toBeUndefined();
    expect(resolveAllConfig(c)).toMatchObject({
      config: {
        EMBEDDING_PROVIDER: 'none',
        EMBEDDING_PREFIX_DOC: 'passage: ',
        EMBEDDING_MAX_TOKENS: 512,
        VECTORDB_INDEX: 'ingestion_files',
        ENABLE_QUERY_GENERATION: false,
        AGENT_API_BASE_URL: 'http://localhost:4000/v1',
      },
      choices: { llm: false, tools: false },
    });
  });

  it('query generation follows an explicit LLM endpoint unless set; weather needs URL and key together', () => {
    const llm = parseConfig(allSchema, { API_KEY: 'k', AGENT_API_BASE_URL: 'http://llm:4000/v1' });
    expect(resolveAllConfig(llm).config.ENABLE_QUERY_GENERATION).toBe(true);
    const off = parseConfig(allSchema, {
      API_KEY: 'k',
      AGENT_API_BASE_URL: 'http://llm:4000/v1',
      ENABLE_QUERY_GENERATION: 'false',
    });
    expect(resolveAllConfig(off).config.ENABLE_QUERY_GENERATION).toBe(false);
    const half = parseConfig(allSchema, { API_KEY: 'k', WEATHER_API_KEY: 'w' });
    expect(() => resolveAllConfig(half)).toThrow(ConfigError);
    expect(() => resolveAllConfig(half)).toThrow(
      /WEATHER_API_BASE_URL and WEATHER_API_KEY must be set together/,
    );
  });
});

describe('kilde serve all: composition', () => {
  it('shares one index between ingestion and retrieval; ready without an LLM; no tool server', async () => {
    const { all, app, logs } = await startAll({});
    expect(all.ingest.pipeline().index).toBe(all.index);
    expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
    // Every service's routes on one app; the tool server's only when configured.
    expect((await app.inject({ method: 'POST', url: '/search', payload: {} })).statusCode).toBe(401);
    expect((await app.inject({ method: 'PUT', url: '/api/v1/ingest' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/echo', payload: {} })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/weather?city=x' })).statusCode).toBe(404);
    expect(logs.text()).toContain(
      'lexical-only search: no dense embedding provider. For hybrid search install a model (npx kilde models install all-minilm-l6-v2, English only) and restart, or use a model server: EMBEDDING_PROVIDER=',
    );

    // Written through the ingest route, found by /search at once (same connection).
    const boundary = 'kildeboundary';
    const body = [
      `--${boundary}\r\nContent-Disposition: form-data; name="file_id"\r\n\r\nf1`,
      `--${boundary}\r\nContent-Disposition: form-data; name="collection_name"\r\n\r\nc1`,
      `--${boundary}\r\nContent-Disposition: form-data; name="user_id"\r\n\r\nu1`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\nContent-Type: text/markdown\r\n\r\n# Otters\n\nSea otters hold hands while they sleep.\n`,
      `--${boundary}--\r\n`,
    ].join('\r\n');
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: body,
    });
    expect(put.statusCode).toBe(200);
    const found = await app.inject({
      method: 'POST',
      url: '/search',
      headers: AUTH,
      payload: { queries: ['otters sleep'], collection_names: ['c1'] },
    });
    expect(found.json().documents[0][0]).toContain('Sea otters hold hands');
  });

  it('an explicit LLM endpoint joins readiness as degraded (search works without it); a weather upstream mounts the tool server', async () => {
    const weather = await startFakeWeather();
    cleanups.push(() => weather.close());
    const { app } = await startAll({
      AGENT_API_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1`,
      WEATHER_API_BASE_URL: weather.url,
      WEATHER_API_KEY: FAKE_KEY,
    });
    const ready = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'ok', degraded: expect.stringMatching(/^llm: /) });
    const w = await app.inject({ method: 'GET', url: '/weather?city=Aarhus', headers: AUTH });
    expect(w.statusCode).toBe(200);
    expect(w.json()).toMatchObject({ city: 'Aarhus' });
  });

  it('ranks lexical hits even before the full-text index has caught up with the writes', async () => {
    const { all, app } = await startAll({});
    const service = all.ingest.pipeline().service;
    // The best match is written last, so weaker ones come first in table order.
    const files = ['a zebra', 'zebra crossing', 'the best match: zebra zebra zebra stripes'];
    for (const [i, text] of files.entries()) {
      await service.ingest(
        {
          fileId: `z${i}`,
          filename: `z${i}.md`,
          collectionName: 'zoo',
          collectionType: 'file',
          userId: 'u',
          overwrite: true,
          source: `z${i}.md`,
        },
        async () => ({ path: await tmpFile(text), filename: `z${i}.md`, bytes: text.length }),
      );
    }
    const res = await app.inject({
      method: 'POST',
      url: '/search',
      headers: AUTH,
      payload: { queries: ['zebra stripes'], collection_names: ['zoo'], k: 1 },
    });
    expect(res.json().documents[0]).toEqual(['the best match: zebra zebra zebra stripes']);
  });
});

async function tmpFile(text: string): Promise<string> {
  const tmp = await tempDir('kilde-file-');
  cleanups.push(tmp.remove);
  const path = join(tmp.dir, 'f.md');
  await writeFile(path, text);
  return path;
}

describe('quickstart pieces', () => {
  it('generates a strong key once, 0600, and reuses it (tightening a loose mode)', async () => {
    const tmp = await tempDir('kilde-key-');
    cleanups.push(tmp.remove);
    const dir = join(tmp.dir, 'nested', 'data');
    const first = await loadOrCreateKey(dir);
    expect(first.created).toBe(true);
    expect(first.key).toMatch(/^kilde_[A-Za-z0-9_-]{43}$/);
    expect((await stat(join(dir, KEY_FILE))).mode & 0o777).toBe(0o600);
    await chmod(join(dir, KEY_FILE), 0o644);
    const again = await loadOrCreateKey(dir);
    expect(again).toMatchObject({ key: first.key, created: false });
    expect((await stat(join(dir, KEY_FILE))).mode & 0o777).toBe(0o600);
    expect((await loadOrCreateKey(join(tmp.dir, 'other'))).key).not.toBe(first.key);
  });

  it('derives file ids from collection and relative path', () => {
    expect(fileIdFor('c', 'docs/a.md')).toMatch(/^[0-9a-f]{32}$/);
    expect(fileIdFor('c', 'docs/a.md')).toBe(fileIdFor('c', 'docs//a.md'));
    expect(fileIdFor('c', 'docs\\a.md')).toBe(fileIdFor('c', 'docs/a.md'));
    expect(fileIdFor('c', 'docs/a.md')).not.toBe(fileIdFor('d', 'docs/a.md'));
    expect(fileIdFor('c', 'docs/a.md')).not.toBe(fileIdFor('c', 'docs/b.md'));
  });

  it('folder sync ingests new and changed files, skips unchanged ones, deletes vanished ones', async () => {
    const { all, dir } = await startAll({});
    const folder = join(dir, 'docs');
    await mkdir(folder);
    const file = (name: string) => ({ path: join(folder, name), relative: `docs/${name}` });
    await writeFile(join(folder, 'a.md'), '# A\n\nalpha text\n');
    await writeFile(join(folder, 'b.md'), '# B\n\nbeta text\n');
    const { service, index } = all.ingest.pipeline();
    const sync = (names: string[]) =>
      syncFolder({
        service,
        index,
        files: names.map(file),
        collection: 'docs',
        userId: 'kilde',
        manifestPath: join(dir, 'docs.json'),
        log: createLogger({ DEBUG: false, LOG_LEVEL_APP: 'error' }, logSink().stream),
      });
    expect(await sync(['a.md', 'b.md'])).toMatchObject({ ingested: 2, unchanged: 0, removed: 0, failed: [] });
    expect(await sync(['a.md', 'b.md'])).toMatchObject({ ingested: 0, unchanged: 2, removed: 0 });
    await writeFile(join(folder, 'a.md'), '# A\n\nalpha changed\n');
    expect(await sync(['a.md'])).toMatchObject({ ingested: 1, unchanged: 0, removed: 1 });
    expect(await index.count({ collectionNames: ['docs'], fileId: fileIdFor('docs', 'docs/b.md') })).toBe(0);
    const manifest = JSON.parse(await readFile(join(dir, 'docs.json'), 'utf8')) as { files: object };
    expect(Object.keys(manifest.files)).toEqual([fileIdFor('docs', 'docs/a.md')]);
    // Gone from the index (another data dir, a wiped table): ingested again despite the same hash.
    await service.deleteFile(fileIdFor('docs', 'docs/a.md'));
    expect(await sync(['a.md'])).toMatchObject({ ingested: 1, unchanged: 0 });
  });
});

describe('search rendering', () => {
  it('highlights query words (and inflections) in bold on a terminal only', () => {
    const terms = queryTerms('Hvad var den spanske syge?');
    expect(terms).toEqual(['spanske', 'hvad', 'syge', 'var', 'den']);
    expect(highlight('Den Spanske Syge', ['spanske'], true)).toBe('Den \u001b[1mSpanske\u001b[22m Syge');
    expect(highlight('spansk influenza', ['spanske'], true)).toContain('\u001b[1mspansk\u001b[22m');
    expect(highlight('Den Spanske Syge', ['spanske'], false)).toBe('Den Spanske Syge');
  });

  it('picks the window with the most query words and collapses whitespace', () => {
    const text = `${'lorem ipsum '.repeat(60)}the\tferry  to Samsø\nleaves at nine ${'dolor sit '.repeat(60)}`;
    const s = snippet(text, queryTerms('ferry Samsø'), 120);
    expect(s).toContain('the ferry to Samsø leaves at nine');
    expect(s.startsWith('…')).toBe(true);
    expect(s.endsWith('…')).toBe(true);
    expect(s.length).toBeLessThanOrEqual(122);
  });
});
