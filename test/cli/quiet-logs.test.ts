import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, Server, tempDir } from './helpers.js';

/**
 * `kilde serve all` on a terminal-style (pretty) log at the default level: one line per request
 * and one per ingested document; health probes add none. (17 lines per search were seen before.)
 */
describe('quiet, useful logs', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let server: Server;
  let base: string;
  const auth = { authorization: 'Bearer log-key' };

  beforeAll(async () => {
    tmp = await tempDir('kilde-logs-');
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as { port: number }).port;
    probe.close();
    base = `http://127.0.0.1:${port}`;
    server = Server.start(
      ['serve', 'all'],
      cleanEnv({
        API_KEY: 'log-key',
        HOST: '127.0.0.1',
        PORT: String(port),
        KILDE_DATA_DIR: `${tmp.dir}/.kilde`,
        LOG_FORMAT: 'pretty',
        NO_COLOR: '1',
      }),
      tmp.dir,
    );
    await server.waitFor(/kilde listening/);
  });
  afterAll(async () => {
    await server?.stop();
    await tmp?.remove();
  });

  /** The output lines `fn` caused, up to the line of a final marker request (logs are ordered). */
  async function linesOf(fn: () => Promise<void>, marker: string): Promise<string[]> {
    const before = server.output.length;
    await fn();
    await fetch(`${base}/${marker}`);
    await server.waitFor(new RegExp(`GET /${marker} 404`));
    const text = server.output.slice(before);
    return text
      .slice(0, text.indexOf(`GET /${marker} 404`))
      .split('\n')
      .slice(0, -1)
      .filter((l) => l.trim() !== '');
  }

  it('an ingest: one line for the request, one for the document', async () => {
    const lines = await linesOf(async () => {
      const form = new FormData();
      for (const [k, v] of Object.entries({ file_id: 'f1', collection_name: 'kb', user_id: 'u1' }))
        form.set(k, v);
      form.set('file', new Blob(['# Ferries\n\nThe ferry to Samsø leaves at nine.']), 'ferries.md');
      const res = await fetch(`${base}/api/v1/ingest`, { method: 'PUT', headers: auth, body: form });
      expect(res.status).toBe(200);
    }, 'marker-ingest');
    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).toMatch(/ingested/);
    expect(lines.join('\n')).toMatch(/PUT \/api\/v1\/ingest 200 \d+ ms/);
  });

  it('a search: one line, with its query count; health probes: none', async () => {
    const lines = await linesOf(async () => {
      for (let i = 0; i < 3; i++) expect((await fetch(`${base}/health`)).status).toBe(200);
      await fetch(`${base}/health/ready`);
      const res = await fetch(`${base}/search`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ queries: ['ferry'], collection_names: ['kb'] }),
      });
      expect(res.status).toBe(200);
    }, 'marker-search');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/POST \/search 200 \d+ ms.*"queries":1/);
  });

  it('a refused request: one line naming why', async () => {
    const lines = await linesOf(async () => {
      await fetch(`${base}/search`, { method: 'POST', headers: { authorization: 'Bearer wrong' } });
    }, 'marker-401');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/POST \/search 401 .*invalid API key/);
  });
});
