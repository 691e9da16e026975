import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENTS } from '../fixtures/index.js';
import { eventually } from '../helpers/eventually.js';
import { cleanEnv, jsonLines, REPO, runCli, Server, tempDir } from './helpers.js';

/**
 * `npm start` for real: the quickstart process on an empty data directory and a free port, fixtures
 * ingested through the CLI (over HTTP and on the index directly) and through raw HTTP, searches by
 * both, then a restart that must find the same key, skip the unchanged docs and answer the same.
 */
describe('npm start (kilde quickstart) end to end', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: NodeJS.ProcessEnv;
  let server: Server;
  let url = '';
  let key = '';
  const dataDir = () => join(tmp.dir, 'data');
  const fixtures = () => join(tmp.dir, 'fixtures');
  const searches: Record<string, unknown> = {};

  const api = (path: string, init: RequestInit = {}, auth = true) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { ...(auth ? { authorization: `Bearer ${key}` } : {}), ...init.headers },
    });
  const search = async (queries: string[], collections: string[], k = 3) => {
    const res = await api('/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queries, collection_names: collections, k }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { documents: string[][]; metadatas: Record<string, unknown>[][] };
  };

  beforeAll(async () => {
    tmp = await tempDir('kilde-quickstart-');
    await mkdir(fixtures());
    for (const f of ['multi_page.pdf', 'word_tables.docx', 'wiki_duck.html']) {
      await copyFile(join(DOCUMENTS, f), join(fixtures(), f));
    }
    env = cleanEnv({ KILDE_DATA_DIR: dataDir(), PORT: '0', HOST: '127.0.0.1' });
  });

  afterAll(async () => {
    await server?.stop();
    await tmp?.remove();
  });

  it('starts on an empty data dir, generates a 0600 key and prints it with two curl lines', async () => {
    server = Server.start(['quickstart'], env);
    url = (await server.waitFor(/Kilde is running at (http:\/\/\S+)/))[1] as string;
    const shown = await server.waitFor(/API key \(generated now, stored in (\S+), mode 0600\):\s+(\S+)/);
    key = shown[2] as string;
    expect(shown[1]).toBe(join(dataDir(), 'api-key'));
    expect(key).toMatch(/^kilde_[A-Za-z0-9_-]{43}$/);
    expect((await readFile(join(dataDir(), 'api-key'), 'utf8')).trim()).toBe(key);
    expect((await stat(join(dataDir(), 'api-key'))).mode & 0o777).toBe(0o600);
    expect(server.output).toContain(`curl -X PUT ${url}/api/v1/ingest -H "Authorization: Bearer ${key}"`);
    expect(server.output).toContain(`curl -X POST ${url}/search -H "Authorization: Bearer ${key}"`);
    expect(server.output).toContain('lexical-only search: no dense embedding provider');
    // The printed address opens the web console.
    expect(server.output).toContain(`Open the web console: ${url}/  (sign in with the key above)`);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<div id="app"></div>');
  });

  it('ingests its own docs in the background and answers searches over them', async () => {
    const docs = await server.waitFor(
      /"kilde-docs" is ready: (\d+) file\(s\) ingested \((\d+) chunks\), (\d+) unchanged, (\d+) failed/,
    );
    const expected = (await readdir(join(REPO, 'docs'))).filter((f) => !f.startsWith('.')).length;
    expect(Number(docs[1])).toBe(expected);
    expect(Number(docs[4])).toBe(0);
    const r = await search(['Which variables does Open WebUI need for external retrieval?'], ['kilde-docs']);
    expect(r.metadatas[0]?.[0]?.source).toBe('docs/deployment.md');
    searches.docs = r;
  });

  it('requires the generated key on protected routes; health, readiness and routes of every service', async () => {
    const body = JSON.stringify({ queries: ['x'], collection_names: ['kilde-docs'] });
    const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
    expect((await api('/search', post, false)).status).toBe(401);
    expect(
      (await api('/search', { ...post, headers: { ...post.headers, authorization: 'Bearer nope' } }, false))
        .status,
    ).toBe(401);
    expect((await api('/metrics', {}, false)).status).toBe(401);
    expect((await api('/api/v1/documents/x', { method: 'DELETE' }, false)).status).toBe(401);
    expect((await api('/echo', { ...post, body: '{"text":"hi"}' }, false)).status).toBe(401);
    expect((await api('/health', {}, false)).status).toBe(200);
    // Without AGENT_API_BASE_URL the LLM is not part of readiness; everything else is.
    const ready = await api('/health/ready', {}, false);
    expect(ready.status).toBe(200);
    const metrics = await (await api('/metrics')).text();
    expect(metrics).toContain('ingest_requests_total');
    expect(metrics).toContain('http_requests_total');
    // The embedded index is open: its LanceDB caches hold the table's metadata, within their bounds.
    const cache = Number(/^lancedb_cache_bytes (\d+)$/m.exec(metrics)?.[1]);
    expect(cache).toBeGreaterThan(0);
    expect(cache).toBeLessThanOrEqual((256 + 64) * 1024 * 1024);
    // The tool server is mounted only with a weather upstream.
    expect((await api('/weather?city=Aarhus')).status).toBe(404);
  });

  it('ingests through HTTP (multipart PUT) and searches it', async () => {
    const form = new FormData();
    form.set('file_id', 'note-1');
    form.set('collection_name', 'notes');
    form.set('user_id', 'me');
    form.set(
      'file',
      new Blob(['# Harbour log\n\nThe lighthouse keeper of Hirtshals writes down every ship that passes.\n']),
      'harbour.md',
    );
    const res = await api('/api/v1/ingest', { method: 'PUT', body: form });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: true, collection_name: 'notes', chunks_count: 1 });
    const r = await search(['lighthouse keeper Hirtshals'], ['notes']);
    expect(r.documents[0]?.[0]).toContain('lighthouse keeper of Hirtshals');
    searches.notes = r;
  });

  it('ingests a folder with the CLI over HTTP and finds it with the CLI and over HTTP', async () => {
    const ingest = await runCli(
      ['ingest', fixtures(), '--collection', 'fx', '--root', tmp.dir, '--url', url, '--api-key', key],
      env,
    );
    expect(ingest.stderr).toContain('ingested 3 of 3 file(s) into "fx"');
    expect(ingest.code).toBe(0);
    const lines = jsonLines(ingest.stdout);
    // One line per file as each finishes (two in flight), then the summary.
    expect(
      lines
        .filter((l) => l.ok === true)
        .map((l) => l.file)
        .sort(),
    ).toEqual(['fixtures/multi_page.pdf', 'fixtures/wiki_duck.html', 'fixtures/word_tables.docx']);
    expect(lines.at(-1)).toMatchObject({ summary: { ok: 3, failed: 0 } });

    // The key is found in the data directory when --api-key is not given.
    const cli = await runCli(['search', 'typewriter Sholes', '-c', 'fx', '--url', url, '--json', '-k', '3'], {
      ...env,
    });
    expect(cli.code).toBe(0);
    const viaCli = JSON.parse(cli.stdout) as {
      documents: string[][];
      metadatas: Record<string, unknown>[][];
      distances: number[][];
    };
    expect(viaCli.metadatas[0]?.[0]).toMatchObject({
      name: 'multi_page.pdf',
      // The document's path under --root, over HTTP as locally (the upload sends it as `path`).
      source: 'fixtures/multi_page.pdf',
      page: expect.any(Number),
    });
    expect(viaCli.documents[0]?.[0]).toContain('Sholes');
    const viaHttp = await search(['typewriter Sholes'], ['fx']);
    expect(viaHttp).toEqual(viaCli);
    searches.fx = viaHttp;
  });

  it('ingests with the CLI on the index directory while the server runs; the server sees it', async () => {
    await writeFile(join(tmp.dir, 'fjord.md'), '# Fjords\n\nLimfjorden cuts through northern Jutland.\n');
    const ingest = await runCli(['ingest', join(tmp.dir, 'fjord.md'), '--collection', 'local'], env, tmp.dir);
    expect(ingest.code).toBe(0);
    // No repository above it and no --root: a file is named by its absolute path, whichever
    // folder the command ran in.
    expect(jsonLines(ingest.stdout)[0]).toMatchObject({
      file: join(tmp.dir, 'fjord.md').slice(1),
      ok: true,
      chunks: 1,
    });
    const hits = await eventually(async () => {
      const found = (await search(['Limfjorden Jutland'], ['local'])).documents[0] ?? [];
      return found.length > 0 && found;
    }, 100);
    expect(hits[0]).toContain('Limfjorden cuts through northern Jutland');
  });

  it('restarts on the same data dir: same key, unchanged docs skipped, same answers', async () => {
    expect(await server.stop()).toBe(0);
    server = Server.start(['quickstart'], env);
    url = (await server.waitFor(/Kilde is running at (http:\/\/\S+)/))[1] as string;
    const shown = await server.waitFor(/API key \(stored in (\S+)\):\s+(\S+)/);
    expect(shown[2]).toBe(key);
    const docs = await server.waitFor(
      /"kilde-docs" is ready: (\d+) file\(s\) ingested \((\d+) chunks\), (\d+) unchanged/,
    );
    expect(Number(docs[1])).toBe(0);
    expect(Number(docs[3])).toBeGreaterThan(0);
    // The same chunks in the same order with the same metadata. Scores are not compared: lexical
    // scores use the whole table's term statistics, which the fjord file ingested since (and the
    // CLI's settle folding it into the full-text index) rightly moved.
    const same = (r: Awaited<ReturnType<typeof search>>) => ({
      documents: r.documents,
      metadatas: r.metadatas,
    });
    const recorded = (name: string) => same(searches[name] as Awaited<ReturnType<typeof search>>);
    expect(
      same(await search(['Which variables does Open WebUI need for external retrieval?'], ['kilde-docs'])),
    ).toEqual(recorded('docs'));
    expect(same(await search(['lighthouse keeper Hirtshals'], ['notes']))).toEqual(recorded('notes'));
    expect(same(await search(['typewriter Sholes'], ['fx']))).toEqual(recorded('fx'));
  });
});
