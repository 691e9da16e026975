import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { logSink } from '../helpers/app.js';
import { cleanEnv, jsonLines, runCli, tempDir } from './helpers.js';

/**
 * `kilde documents versions|restore` on the embedded index (local) and against a running server
 * (`--url`): a re-ingest keeps the replaced version (KEEP_VERSIONS), the CLI lists it and restores
 * it, and search answers from the restored text.
 */
interface Versions {
  collection_name: string;
  versions: { version: string; live: boolean; chunks: number; source: string | null }[];
}

describe('documents versions and restore', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let local: NodeJS.ProcessEnv;
  let app: KildeApp;
  let url: string;

  beforeAll(async () => {
    tmp = await tempDir('kilde-cli-versions-');
    local = cleanEnv({ KILDE_DATA_DIR: join(tmp.dir, 'local'), KEEP_VERSIONS: '3' });
    const config = parseConfig(allSchema, {
      API_KEY: 'cli-key',
      KILDE_DATA_DIR: join(tmp.dir, 'server'),
      KEEP_VERSIONS: '3',
      EMBEDDING_PROVIDER: 'none',
    });
    const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
    const all = await composeAll(config, log);
    app = await buildApp(config, { logger: log, parts: all.parts });
    await startParts(all.parts);
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await tmp?.remove();
  });

  describe.each(['local', 'url'] as const)('%s', (mode) => {
    const remote = () => (mode === 'url' ? ['--url', url, '--api-key', 'cli-key'] : []);
    let fileId: string;
    let old: Versions['versions'][number];

    // Each spawn of `kilde` takes seconds on a loaded machine: generous limits, no timing asserted.
    it('lists the version a re-ingest kept', { timeout: 120_000 }, async () => {
      const file = join(tmp.dir, `${mode}-guide.md`);
      const ingest = async (text: string) => {
        await writeFile(file, `# Guide\n\n${text}\n`);
        const run = await runCli(['ingest', file, '-c', 'guides', ...remote()], local, tmp.dir);
        expect(run.code, run.stderr).toBe(0);
        return String(jsonLines(run.stdout)[0]?.file_id);
      };
      fileId = await ingest('The ferry to Samsø leaves at nine.');
      expect(await ingest('The ferry to Samsø leaves at noon.')).toBe(fileId);
      const listed = await runCli(['documents', 'versions', fileId, '--json', ...remote()], local, tmp.dir);
      expect(listed.code, listed.stderr).toBe(0);
      const body = JSON.parse(listed.stdout) as Versions;
      expect(body.collection_name).toBe('guides');
      expect(body.versions.map((v) => v.live)).toEqual([true, false]);
      old = body.versions[1]!;
    });

    it('restores it: search answers from the restored text', { timeout: 120_000 }, async () => {
      const restored = await runCli(
        ['documents', 'restore', fileId, old.version, ...remote()],
        local,
        tmp.dir,
      );
      expect(restored.code, restored.stderr).toBe(0);
      expect(JSON.parse(restored.stdout)).toEqual({
        status: true,
        file_id: fileId,
        collection_name: 'guides',
        version: old.version,
        chunks_count: old.chunks,
      });
      const search = await runCli(
        ['search', 'ferry Samsø', '-c', 'guides', '--json', ...remote()],
        local,
        tmp.dir,
      );
      const documents = (JSON.parse(search.stdout) as { documents: string[][] }).documents[0]!;
      expect(documents.some((d) => d.includes('nine'))).toBe(true);
      expect(documents.some((d) => d.includes('noon'))).toBe(false);
    });

    it('prints the versions for people, and refuses an unknown version', { timeout: 120_000 }, async () => {
      const human = await runCli(
        ['documents', 'versions', fileId, '-c', 'guides', ...remote()],
        local,
        tmp.dir,
      );
      expect(human.stdout).toContain(`* ${old.version}`);
      expect(human.stdout).toContain('2 version(s)');
      const missing = await runCli(['documents', 'restore', fileId, 'nope', ...remote()], local, tmp.dir);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^kilde: restore: No kept version nope of file_id /);
    });
  });
});
