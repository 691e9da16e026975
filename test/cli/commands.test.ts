import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@lancedb/lancedb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENTS } from '../fixtures/index.js';
import { cleanEnv, jsonLines, runCli, tempDir } from './helpers.js';

/** The CLI's other commands and its failure paths, each a real `kilde` process on a temp index. */
describe('kilde extract / documents / failures', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: NodeJS.ProcessEnv;
  const docx = () => join(tmp.dir, 'in', 'word_tables.docx');

  beforeAll(async () => {
    tmp = await tempDir('kilde-cli-');
    env = cleanEnv({ KILDE_DATA_DIR: join(tmp.dir, '.kilde') });
    await mkdir(join(tmp.dir, 'in'));
    await copyFile(join(DOCUMENTS, 'word_tables.docx'), docx());
    await writeFile(
      join(tmp.dir, 'in', 'notes.md'),
      '# Notes\n\n## Ferries\n\nThe ferry to Samsø leaves at nine.\n',
    );
    // Not a format any engine reads: the one file that must fail.
    await writeFile(join(tmp.dir, 'in', 'blob.bin'), randomBytes(2048));
  });
  afterAll(() => tmp?.remove());

  it('extract prints text and metadata; --json the probe shape', async () => {
    const run = await runCli(['extract', docx()], env, tmp.dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('--- document 1 (engine inprocess) ---');
    expect(run.stdout).toContain('authors: ["Cesar Berrospi Ramis"]');
    expect(run.stdout).toContain('# Test with tables');
    expect(run.stdout).toContain('| Header 0.0 | Header 0.1 | Header 0.2 |');
    const json = await runCli(['extract', docx(), '--json'], env, tmp.dir);
    const body = JSON.parse(json.stdout) as {
      engine: string;
      documents: { text: string; metadata: object }[];
    };
    expect(body.engine).toBe('inprocess');
    expect(body.documents[0]?.metadata).toMatchObject({ languages: ['en'] });
  });

  it('extract with an engine that cannot read the file: one line, non-zero exit', async () => {
    const run = await runCli(['extract', docx(), '--engine', 'pdf-inprocess'], env, tmp.dir);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^kilde: .*PDF/i);
  });

  it('ingest reports each failure with its reason and exits 1; the others are stored', async () => {
    const run = await runCli(['ingest', join(tmp.dir, 'in'), '-c', 'mixed', '--root', tmp.dir], env, tmp.dir);
    expect(run.code).toBe(1);
    const lines = jsonLines(run.stdout);
    const bad = lines.find((l) => l.file === 'in/blob.bin');
    expect(bad).toMatchObject({ ok: false, chunks: 0, code: 'EXTRACTION_FAILED' });
    expect(String(bad?.error)).not.toBe('');
    expect(lines.at(-1)).toMatchObject({ summary: { ok: 2, failed: 1 } });
    expect(run.stderr).toContain('ingested 2 of 3 file(s) into "mixed"');
    expect(run.stderr).toMatch(/in\/blob\.bin: .+ \(EXTRACTION_FAILED\)/);
    // Before exiting, the new rows joined the full-text index (no optimize left to die with it).
    expect(run.stderr).toMatch(/^indexed the new chunks in \d+\.\d s$/m);
    const db = await connect(join(tmp.dir, '.kilde', 'lancedb'));
    const table = await db.openTable('ingestion_files');
    const fts = (await table.listIndices()).find((i) => i.indexType === 'FTS');
    expect(await table.indexStats(fts?.name ?? '')).toMatchObject({ numUnindexedRows: 0 });
    table.close();
    db.close();
    const list = await runCli(['documents', 'list', '-c', 'mixed'], env, tmp.dir);
    expect(list.stdout).toContain('in/notes.md');
    expect(list.stdout).toContain('in/word_tables.docx');
    expect(list.stdout).toContain('2 document(s) in "mixed"');
  });

  it('documents chunks and delete on the embedded index', async () => {
    const list = JSON.parse(
      (await runCli(['documents', 'list', '-c', 'mixed', '--json'], env, tmp.dir)).stdout,
    ) as {
      file_id: string;
      source: string;
      chunks: number;
    }[];
    const notes = list.find((d) => d.source === 'in/notes.md');
    expect(notes).toBeDefined();
    const chunks = await runCli(
      ['documents', 'chunks', notes?.file_id ?? '', '--content', 'full'],
      env,
      tmp.dir,
    );
    expect(chunks.code).toBe(0);
    const page = JSON.parse(chunks.stdout) as {
      stats: { total_chunks: number; collection_name: string };
      chunks: { content: string; meta: { headers: string[] } }[];
    };
    expect(page.stats).toMatchObject({ total_chunks: notes?.chunks, collection_name: 'mixed' });
    expect(page.chunks[0]?.content).toContain('The ferry to Samsø leaves at nine.');
    expect(page.chunks[0]?.meta.headers).toEqual(['Notes', 'Ferries']);

    const del = await runCli(['documents', 'delete', notes?.file_id ?? ''], env, tmp.dir);
    expect(JSON.parse(del.stdout)).toEqual({
      status: true,
      file_id: notes?.file_id,
      chunks_deleted: notes?.chunks,
    });
    const search = await runCli(['search', 'ferry Samsø', '-c', 'mixed', '--json'], env, tmp.dir);
    expect((JSON.parse(search.stdout) as { documents: string[][] }).documents[0]).not.toContainEqual(
      expect.stringContaining('Samsø'),
    );
  });

  it('configuration and usage errors: one line, exit 2', async () => {
    const bad = await runCli(['search', 'x', '-c', 'a'], { ...env, EMBEDDING_PROVIDER: 'bogus' }, tmp.dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^kilde: Configuration error: EMBEDDING_PROVIDER /),
    ]);
    const noKey = await runCli(['serve', 'all'], { ...env, PORT: '0' }, tmp.dir);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr.trim()).toBe('kilde: Configuration error: API_KEY is required');
    const nothing = await runCli(['ingest', 'nowhere/*.md', '-c', 'a'], env, tmp.dir);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr.trim()).toBe('kilde: no files match nowhere/*.md');
    const remote = await runCli(
      ['search', 'x', '-c', 'a', '--url', 'http://127.0.0.1:9', '--api-key', 'k'],
      env,
    );
    expect(remote.code).toBe(1);
    expect(remote.stderr).toMatch(/^kilde: connect: cannot reach http:\/\/127\.0\.0\.1:9/);
    const engine = await runCli(
      ['ingest', docx(), '-c', 'a', '--url', 'http://127.0.0.1:9', '--engine', 'inprocess'],
      env,
    );
    expect(engine.code).toBe(2);
  });
});
