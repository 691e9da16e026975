import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findService } from '../../src/cli/services.js';
import { kernelSchema } from '../../src/config/kernel.js';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import type { ServicePart } from '../../src/http/app.js';
import { CONSOLE_CSP, CONSOLE_DIR, createConsolePart } from '../../src/http/console.js';
import { createLogger } from '../../src/http/logger.js';
import { tempDir } from '../cli/helpers.js';
import { AUTH, logSink, testApp, testConfig } from '../helpers/app.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A built console in a temporary directory, laid out as Vite writes it. */
async function builtConsole() {
  const tmp = await tempDir('kilde-console-dist-');
  cleanups.push(tmp.remove);
  await mkdir(join(tmp.dir, 'assets'));
  await writeFile(
    join(tmp.dir, 'index.html'),
    '<!doctype html><script type="module" src="/assets/app-abc123.js"></script>',
  );
  await writeFile(join(tmp.dir, 'assets', 'app-abc123.js'), 'console.log("console")');
  await writeFile(join(tmp.dir, 'assets', 'app-abc123.js.br'), Buffer.from([0x0b, 0x01, 0x80]));
  return tmp.dir;
}

async function appWith(parts: ServicePart[]) {
  const { app, logs } = await testApp(testConfig(kernelSchema, {}), parts);
  cleanups.push(() => app.close());
  return { app, logs };
}

describe('the console part', () => {
  it('serves index.html at / revalidated on each load, hashed assets for a year, each with the CSP', async () => {
    const { app } = await appWith([createConsolePart(await builtConsole())]);
    const index = await app.inject({ method: 'GET', url: '/' });
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toMatch(/^text\/html/);
    expect(index.headers['cache-control']).toBe('no-cache');
    expect(index.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(index.headers['x-content-type-options']).toBe('nosniff');
    expect(index.headers['x-frame-options']).toBe('DENY');
    expect(index.headers['referrer-policy']).toBe('no-referrer');
    expect(index.headers['set-cookie']).toBeUndefined();
    expect(index.body).toContain('/assets/app-abc123.js');

    const asset = await app.inject({ method: 'GET', url: '/assets/app-abc123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(asset.body).toBe('console.log("console")');
    // The Brotli copy is served in its place to a client that takes it, never at its own path.
    const br = await app.inject({
      method: 'GET',
      url: '/assets/app-abc123.js',
      headers: { 'accept-encoding': 'br' },
    });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.rawPayload).toEqual(Buffer.from([0x0b, 0x01, 0x80]));
    expect((await app.inject({ method: 'GET', url: '/assets/app-abc123.js.br' })).statusCode).toBe(404);
  });

  it('leaves every other path to the kernel: JSON 404s, the API still needs the key, no CSP on it', async () => {
    const { app } = await appWith([createConsolePart(await builtConsole())]);
    const missing = await app.inject({ method: 'GET', url: '/assets/nope.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ detail: 'Not found: GET /assets/nope.js', code: 'NOT_FOUND' });
    const health = await app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(health.headers['content-security-policy']).toBeUndefined();
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: AUTH })).statusCode).toBe(200);
  });

  it('answers 503 CONSOLE_NOT_BUILT at / and warns when the assets are missing; the API is unaffected', async () => {
    const empty = await tempDir('kilde-console-empty-');
    cleanups.push(empty.remove);
    const { app, logs } = await appWith([createConsolePart(empty.dir)]);
    const res = await app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ detail: 'The web console is not built', code: 'CONSOLE_NOT_BUILT' });
    expect(logs.lines.some((l) => String(l.msg).includes('npm run build:console'))).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('the package ships a built console (npm run build:console, run by npm ci)', async () => {
    const files = await readdir(CONSOLE_DIR, { recursive: true });
    expect(files).toContain('index.html');
    expect(files.some((f) => /^assets[/\\]index-[\w-]+\.js$/.test(f))).toBe(true);
    expect(files.some((f) => /^assets[/\\]index-[\w-]+\.css$/.test(f))).toBe(true);
  });
});

describe('CONSOLE_ENABLED per service', () => {
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'error' }, logSink().stream);
  const partNames = async (service: string, env: Record<string, string>) => {
    const configured = findService(service)!.configure({ API_KEY: 'k', EMBEDDING_PROVIDER: 'none', ...env });
    const parts = await configured.create(log);
    cleanups.push(async () => {
      for (const p of [...parts].reverse()) await p.close?.();
    });
    return parts.map((p) => p.name);
  };

  it('is on in serve all (with the chunk inspection it reads) and off in ingest and retrieve', async () => {
    const all = parseConfig(allSchema, { API_KEY: 'k' });
    expect(all.CONSOLE_ENABLED).toBe(true);
    expect(all.ENABLE_INSPECTION_API).toBe(true);
    expect(parseConfig(allSchema, { API_KEY: 'k', CONSOLE_ENABLED: 'false' }).CONSOLE_ENABLED).toBe(false);
    const data = await tempDir('kilde-console-svc-');
    cleanups.push(data.remove);
    const env = { KILDE_DATA_DIR: data.dir };
    expect(await partNames('retrieve', env)).not.toContain('console');
    expect(await partNames('retrieve', { ...env, CONSOLE_ENABLED: 'true' })).toContain('console');
    expect(await partNames('ingest', env)).not.toContain('console');
    expect(await partNames('ingest', { ...env, CONSOLE_ENABLED: 'true' })).toContain('console');
  });
});
