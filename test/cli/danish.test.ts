import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DANISH_CHAPTERS, DANISH_CORPUS } from '../fixtures/index.js';
import { cleanEnv, jsonLines, runCli, tempDir } from './helpers.js';

const CORPUS = DANISH_CORPUS;
const QUERY = 'Hvad var den spanske syge?';

/**
 * Issue 7's done-when, with the real CLI on the embedded defaults (lexical-only, markdown chunks,
 * English BM25 settings): `kilde ingest <corpus> --collection da`, then `kilde search`.
 */
describe('kilde ingest + kilde search on the Danish test textbook (embedded index)', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: NodeJS.ProcessEnv;
  const docs = async () => {
    const run = await runCli(['documents', 'list', '--collection', 'da', '--json'], env, tmp.dir);
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as { file_id: string; source: string; chunks: number }[];
  };

  beforeAll(async () => {
    tmp = await tempDir('kilde-danish-');
    env = cleanEnv({ KILDE_DATA_DIR: join(tmp.dir, '.kilde') });
  });
  afterAll(() => tmp?.remove());

  it('ingests the folder: one JSON line per file, a summary, exit 0', async () => {
    const run = await runCli(
      ['ingest', CORPUS, '--collection', 'da', '--root', join(CORPUS, '..')],
      env,
      tmp.dir,
    );
    expect(run.stderr).toMatch(
      new RegExp(`ingested ${DANISH_CHAPTERS} of ${DANISH_CHAPTERS} file\\(s\\) into "da": \\d+ chunks`),
    );
    expect(run.code).toBe(0);
    const lines = jsonLines(run.stdout);
    const files = lines.filter((l) => 'file' in l);
    expect(files).toHaveLength(DANISH_CHAPTERS);
    expect(files.every((l) => l.ok === true && typeof l.chunks === 'number' && l.chunks > 0)).toBe(true);
    expect(files.map((l) => l.file)).toContain('corpus/1.9.md');
    expect(lines.at(-1)).toMatchObject({ summary: { ok: DANISH_CHAPTERS, failed: 0, failures: [] } });
  });

  it('puts "1.9.2 Den Spanske Syge" at the top', async () => {
    const run = await runCli(['search', QUERY, '--collection', 'da', '--json'], env, tmp.dir);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as {
      documents: string[][];
      metadatas: { headers?: string[]; source?: string }[][];
      distances: number[][];
    };
    expect(result.documents[0]).toHaveLength(5);
    expect(result.metadatas[0]?.[0]?.headers?.at(-1)).toBe('1.9.2 Den Spanske Syge');
    expect(result.metadatas[0]?.[0]?.source).toBe('corpus/1.9.md');
    const scores = result.distances[0] ?? [];
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });

  it('prints ranked hits for people: score, file, breadcrumb, snippet (no ANSI off a terminal)', async () => {
    const run = await runCli(['search', QUERY, '-c', 'da', '-k', '2'], env, tmp.dir);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toMatch(/^1\. \d+\.\d{3} {2}corpus\/1\.9\.md$/);
    expect(lines[1]).toBe('   1.9 Verdenskrig, kriser og socialreformer (1914-40) › 1.9.2 Den Spanske Syge');
    expect(lines[2]).toMatch(/Spanske Syge/);
    expect(run.stdout).not.toContain('\u001b[');
    expect(run.stdout).toMatch(/^2\. /m);
  });

  it('re-ingesting the same folder replaces each file: same documents, no duplicate chunks', async () => {
    const before = await docs();
    expect(before).toHaveLength(DANISH_CHAPTERS);
    const run = await runCli(
      ['ingest', CORPUS, '--collection', 'da', '--concurrency', '4', '--root', join(CORPUS, '..')],
      env,
      tmp.dir,
    );
    expect(run.code).toBe(0);
    const after = await docs();
    expect(after.map((d) => [d.file_id, d.source, d.chunks])).toEqual(
      before.map((d) => [d.file_id, d.source, d.chunks]),
    );
  });
});
