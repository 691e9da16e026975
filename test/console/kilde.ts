import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startService } from '../../src/cli/serve.js';
import { tempDir } from '../cli/helpers.js';

export const KEY = 'console-test-key';
export const FIXTURES = fileURLToPath(new URL('../fixtures/documents/', import.meta.url));

/**
 * A real `kilde serve all` (the code path of `npm start`: the console part included) on a free
 * port, LanceDB in a temporary directory, lexical search, in-process extraction.
 */
export async function startKilde(env: Record<string, string> = {}) {
  const tmp = await tempDir('kilde-console-');
  const running = await startService('all', {
    API_KEY: KEY,
    KILDE_DATA_DIR: tmp.dir,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_FORMAT: 'json',
    LOG_LEVEL_APP: 'error',
    // Retired versions are kept (for the restore screen); 0, the default, deletes them.
    KEEP_VERSIONS: '3',
    ...env,
  });
  const url = running.address;
  const auth = { authorization: `Bearer ${KEY}` };

  /** A JSON call to the API (what the tests check the console against). */
  async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  /** Whether a route exists: an unknown route gets the kernel's own `Not found: METHOD /path`. */
  async function hasRoute(method: string, path: string): Promise<boolean> {
    const res = await running.app.inject({ method: method as 'GET', url: path, headers: auth });
    if (res.statusCode !== 404) return true;
    const body = res.json() as { detail?: string };
    return body.detail !== `Not found: ${method} ${path.split('?')[0]}`;
  }

  /** Ingests a file the synchronous way (PUT /api/v1/ingest), to set a scene up. */
  async function ingest(
    file: string | { name: string; bytes: Uint8Array },
    fileId: string,
    collection: string,
  ) {
    const name = typeof file === 'string' ? basename(file) : file.name;
    const bytes = typeof file === 'string' ? await readFile(join(FIXTURES, file)) : file.bytes;
    const form = new FormData();
    form.set('file_id', fileId);
    form.set('collection_name', collection);
    form.set('user_id', 'test');
    form.set('file', new Blob([new Uint8Array(bytes)]), name);
    const res = await fetch(`${url}/api/v1/ingest`, { method: 'PUT', headers: auth, body: form });
    const body = (await res.json()) as { chunks_count?: number };
    if (res.status !== 200)
      throw new Error(`ingest of ${name} answered ${res.status}: ${JSON.stringify(body)}`);
    return body;
  }

  return {
    url,
    running,
    api,
    hasRoute,
    ingest,
    async close() {
      await running.app.close();
      await tmp.remove();
    },
  };
}
