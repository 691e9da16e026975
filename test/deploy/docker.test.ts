import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { allService } from '../../src/cli/services.js';
import { REPO, Server } from '../cli/helpers.js';

/**
 * No Docker engine runs here, so the image is tested by its parts: the runtime stage's production
 * install is made with the Dockerfile's own `npm ci` line (cached per lock file), the build output
 * is copied in, and the image's entry command and health check run against it with the image's
 * environment. The compose file is parsed and held to what Kilde and docs/deployment.md say.
 */
const run = promisify(execFile);

interface Stage {
  env: Record<string, string>;
  runs: string[];
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
  user?: string;
  volumes: string[];
}

/** The runtime (last) stage of the Dockerfile: ENV, RUN lines, ENTRYPOINT, CMD, HEALTHCHECK, USER. */
function runtimeStage(dockerfile: string): Stage {
  const lines = dockerfile.replace(/\\\n\s*/g, ' ').split('\n');
  const from = lines.map((l, i) => (/^FROM\s/i.test(l) ? i : -1)).filter((i) => i >= 0);
  const stage: Stage = { env: {}, runs: [], entrypoint: [], cmd: [], healthcheck: [], volumes: [] };
  for (const line of lines.slice(from.at(-1))) {
    const [, op = '', rest = ''] = /^(\w+)\s+(.*)$/.exec(line.trim()) ?? [];
    if (op === 'ENV') for (const m of rest.matchAll(/(\w+)=(\S+)/g)) stage.env[m[1]!] = m[2]!;
    if (op === 'RUN') stage.runs.push(rest);
    if (op === 'ENTRYPOINT') stage.entrypoint = JSON.parse(rest) as string[];
    if (op === 'CMD') stage.cmd = JSON.parse(rest) as string[];
    if (op === 'HEALTHCHECK') stage.healthcheck = JSON.parse(rest.slice(rest.indexOf('CMD') + 3)) as string[];
    if (op === 'USER') stage.user = rest;
    if (op === 'VOLUME') stage.volumes = JSON.parse(rest) as string[];
  }
  return stage;
}

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('Dockerfile', () => {
  let stage: Stage;
  let app: string;
  let data: string;

  beforeAll(async () => {
    const dockerfile = await readFile(join(REPO, 'Dockerfile'), 'utf8');
    stage = runtimeStage(dockerfile);
    const install = stage.runs
      .find((r) => r.includes('npm ci'))!
      .split('&&')[0]!
      .trim();
    const lock = await readFile(join(REPO, 'package-lock.json'));
    const pkg = await readFile(join(REPO, 'package.json'));
    const key = createHash('sha256').update(lock).update(pkg).update(install).digest('hex').slice(0, 16);
    // The production install is reused while the lock file and the Dockerfile's line stay the same.
    app = join(REPO, 'node_modules/.cache/kilde-production-install', key);
    if (!existsSync(join(app, 'node_modules/.package-lock.json'))) {
      await rm(app, { recursive: true, force: true });
      await mkdir(app, { recursive: true });
      await writeFile(join(app, 'package.json'), pkg);
      await writeFile(join(app, 'package-lock.json'), lock);
      const [cmd, ...args] = install.split(/\s+/);
      await run(cmd === 'npm' ? 'npm' : cmd!, [...args, '--prefer-offline'], {
        cwd: app,
        maxBuffer: 1 << 24,
      });
    }
    // `COPY --from=build /app/dist ./dist`, `COPY bin ./bin`, `COPY docs ./docs`.
    for (const dir of ['dist', 'bin', 'docs']) {
      await rm(join(app, dir), { recursive: true, force: true });
      await cp(join(REPO, dir), join(app, dir), { recursive: true });
    }
    data = await mkdtemp(join(tmpdir(), 'kilde-image-data-'));
  }, 600_000);
  afterAll(() => rm(data, { recursive: true, force: true }));

  it('runs as a non-root user with a data volume, on a production install without dev dependencies', () => {
    expect(stage.user).toBe('node');
    expect(stage.volumes).toEqual([stage.env.KILDE_DATA_DIR]);
    expect(stage.runs.some((r) => /npm ci --omit=dev/.test(r))).toBe(true);
    expect(existsSync(join(app, 'node_modules/@lancedb/lancedb'))).toBe(true);
    // (typescript may come along as a peer of a runtime package; the test tools must not.)
    for (const dev of ['vitest', 'tsx', '@biomejs/biome', 's3rver']) {
      expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
    }
  });

  it('its entry command starts Kilde, which ingests and searches; its health check passes', async () => {
    const port = await freePort();
    // The image's environment, with the data directory and port of this test.
    const env = {
      PATH: process.env.PATH ?? '',
      ...stage.env,
      KILDE_DATA_DIR: data,
      PORT: String(port),
      API_KEY: 'image-key',
    };
    const [node, ...args] = [...stage.entrypoint, ...stage.cmd];
    expect(node).toBe('node');
    const server = new Server(
      spawn(process.execPath, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    try {
      await server.waitFor(/kilde listening/, 60_000);
      const base = `http://127.0.0.1:${port}`;
      const auth = { authorization: 'Bearer image-key' };
      const form = new FormData();
      for (const [k, v] of Object.entries({ file_id: 'f1', collection_name: 'kb', user_id: 'u1' }))
        form.set(k, v);
      form.set('file', new Blob(['# Ferries\n\nThe ferry to Samsø leaves at nine.']), 'ferries.md');
      const put = await fetch(`${base}/api/v1/ingest`, { method: 'PUT', headers: auth, body: form });
      expect(put.status, await put.clone().text()).toBe(200);
      const search = await fetch(`${base}/search`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ queries: ['ferry Samsø'], collection_names: ['kb'] }),
      });
      expect(((await search.json()) as { documents: string[][] }).documents[0]?.[0]).toContain('Samsø');
      const [hcNode, ...hcArgs] = stage.healthcheck;
      expect(hcNode).toBe('node');
      const hc = await run(process.execPath, hcArgs, { env: { ...env } }).then(
        () => 0,
        (e: { code?: number }) => e.code ?? 1,
      );
      expect(hc).toBe(0);
      expect(existsSync(join(data, 'lancedb'))).toBe(true);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('compose.yaml', () => {
  // biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, checked field by field below
  let compose: any;
  beforeAll(async () => {
    compose = parse(await readFile(join(REPO, 'compose.yaml'), 'utf8'));
  });

  it('mirrors the reference stack: Kilde built from this repository, Qdrant, an S3 store, Open WebUI', () => {
    expect(Object.keys(compose.services)).toEqual(
      expect.arrayContaining(['kilde', 'qdrant', 'minio', 'openwebui']),
    );
    expect(compose.services.kilde.build).toBe('.');
    expect(compose.services.qdrant.image).toMatch(/^qdrant\/qdrant:/);
    expect(compose.services.kilde.volumes).toEqual(['kilde-data:/data']);
  });

  it('gives Kilde only variables Kilde knows', () => {
    const known = new Set(Object.keys(allService.schema.shape));
    const env = Object.keys(compose.services.kilde.environment);
    expect(env.filter((name) => !known.has(name))).toEqual([]);
    expect(compose.services.kilde.environment.VECTORDB_URI).toBe('http://qdrant:6333');
  });

  it('points Open WebUI at Kilde with the variables of docs/deployment.md and the same key', async () => {
    const doc = await readFile(join(REPO, 'docs/deployment.md'), 'utf8');
    const ow = compose.services.openwebui.environment;
    for (const name of [
      'EXTERNAL_INGESTION_ENGINE',
      'EXTERNAL_INGESTION_URL',
      'EXTERNAL_INGESTION_API_KEY',
      'RAG_RETRIEVAL_ENGINE',
      'RAG_EXTERNAL_RETRIEVAL_URL',
      'RAG_EXTERNAL_RETRIEVAL_API_KEY',
    ]) {
      expect(ow[name], name).toBeDefined();
      expect(doc).toContain(`\`${name}\``);
    }
    expect(ow.EXTERNAL_INGESTION_URL).toBe('http://kilde:8000');
    expect(ow.RAG_EXTERNAL_RETRIEVAL_URL).toBe('http://kilde:8000/');
    expect(ow.EXTERNAL_INGESTION_API_KEY).toBe(compose.services.kilde.environment.API_KEY);
    expect(ow.RAG_EXTERNAL_RETRIEVAL_API_KEY).toBe(compose.services.kilde.environment.API_KEY);
    // Open WebUI's bucket is the one Kilde may read.
    expect(compose.services.kilde.environment.OBJECTSTORE_ALLOWED_BUCKETS).toBe(ow.S3_BUCKET_NAME);
  });
});
