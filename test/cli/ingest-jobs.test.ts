import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobClient } from '../../src/cli/job-client.js';
import { ingestWithJobs } from '../../src/cli/job-ingest.js';
import { findFiles } from '../../src/cli/walk.js';
import type { JobBatch } from '../../src/ingest/jobs/batch.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { BIN, cleanEnv, jsonLines, runCli, tempDir } from './helpers.js';

/**
 * `kilde ingest <folder> --url …` on the jobs API: the files in a job batch, failures summarised by
 * code, unchanged files skipped on the next run, and a run stopped with Ctrl-C resumed without
 * submitting twice. The server is the ingest service in this process (in-process queue), listening
 * on a port.
 */
let embed: FakeEmbeddingsServer;
let h: Harness;
let url: string;
let work: Awaited<ReturnType<typeof tempDir>>;
let env: NodeJS.ProcessEnv;

async function batch(id: unknown): Promise<JobBatch> {
  const res = await h.app.inject({ method: 'GET', url: `/api/v1/job-batches/${String(id)}`, headers: AUTH });
  expect(res.statusCode).toBe(200);
  return res.json() as JobBatch;
}

/** Batches the server has queued so far (its log says so for each). */
const queuedBatches = () => h.logs.lines.filter((l) => l.msg === 'job batch queued').length;

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 16 });
  h = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    EMBEDDING_MODEL: 'fake-embed',
    EMBEDDING_DIM: '16',
    EMBEDDING_MAX_RETRIES: '0',
    JOBS_CONCURRENCY: '2',
  });
  url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  work = await tempDir('kilde-cli-jobs-');
  await mkdir(join(work.dir, 'notes'));
  await writeFile(join(work.dir, 'notes', 'heron.md'), '# Heron\n\nThe grey heron waits in the marsh.\n');
  await writeFile(join(work.dir, 'notes', 'wren.txt'), 'The wren sings in the hedge at dawn.\n');
  await writeFile(join(work.dir, 'notes', 'broken.pdf'), '%PDF-1.7 this is not a PDF');
  env = cleanEnv({ KILDE_DATA_DIR: join(work.dir, 'data'), KILDE_API_KEY: 'test-key' });
});
afterAll(async () => {
  await h?.close();
  await embed?.close();
  await work?.remove();
});

describe('kilde ingest --url on ingestion jobs', () => {
  it('submits the files in one batch, follows it to the end and sums up failures by code', async () => {
    const run = await runCli(['ingest', 'notes', '-c', 'notes', '--root', '.', '--url', url], env, work.dir);
    expect(run.code, run.stderr).toBe(1);
    const lines = jsonLines(run.stdout);
    const files = lines.filter((l) => 'file' in l);
    expect(files.map((l) => l.file).sort()).toEqual(['notes/broken.pdf', 'notes/heron.md', 'notes/wren.txt']);
    expect(new Set(files.map((l) => l.job_id)).size).toBe(1);
    expect(files.find((l) => l.file === 'notes/broken.pdf')).toMatchObject({
      ok: false,
      code: 'EXTRACTION_FAILED',
    });
    expect(run.stderr).toContain('ingested 2 of 3 file(s) into "notes"');
    expect(run.stderr).toContain('by code: EXTRACTION_FAILED ×1');
    const server = await batch(files[0]!.job_id);
    expect(server.counts).toEqual({ files: 3, queued: 0, running: 0, done: 2, failed: 1 });
    expect(server.files.map((f) => f.name).sort()).toEqual(['broken.pdf', 'heron.md', 'wren.txt']);
    // No job per file.
    const jobs = await h.app.inject({ method: 'GET', url: '/api/v1/jobs', headers: AUTH });
    expect(jobs.json().jobs).toEqual([]);
  });

  it('skips unchanged files on the next run and submits only the changed and the failed ones', async () => {
    await writeFile(join(work.dir, 'notes', 'wren.txt'), 'The wren sings in the hedge at dusk now.\n');
    const run = await runCli(['ingest', 'notes', '-c', 'notes', '--root', '.', '--url', url], env, work.dir);
    expect(run.stderr).toContain('(1 unchanged, skipped)');
    const lines = jsonLines(run.stdout).filter((l) => 'file' in l);
    expect(lines.find((l) => l.file === 'notes/heron.md')).toMatchObject({ ok: true, skipped: true });
    const wren = lines.find((l) => l.file === 'notes/wren.txt');
    expect(wren).toMatchObject({ ok: true });
    expect((await batch(wren!.job_id)).files.map((f) => f.name).sort()).toEqual(['broken.pdf', 'wren.txt']);
  });

  it('Ctrl-C stops following; the same command resumes and follows the job already submitted', async () => {
    await writeFile(join(work.dir, 'notes', 'otter.txt'), 'The otter dives for crayfish among the reeds.\n');
    let release!: () => void;
    embed.faults.push({ kind: 'held', until: new Promise<void>((r) => (release = r)) });
    const before = queuedBatches();
    const child = spawn(
      process.execPath,
      [BIN, 'ingest', 'notes/otter.txt', '-c', 'notes', '--root', '.', '--url', url],
      {
        env,
        cwd: work.dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    // Until its batch runs, held in its embedding call.
    await eventually(() => embed.inputs().some((t) => t.includes('otter')));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('interrupted after 0 of 1 file(s)');
    release();

    const run = await runCli(
      ['ingest', 'notes/otter.txt', '-c', 'notes', '--root', '.', '--url', url],
      env,
      work.dir,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(jsonLines(run.stdout).find((l) => 'file' in l)).toMatchObject({
      ok: true,
      file: 'notes/otter.txt',
    });
    // One batch for the file: the resumed run followed it instead of submitting it again.
    expect(queuedBatches() - before).toBe(1);
  });

  it('against a server without job batches (404), submits one job per file as before', async () => {
    await writeFile(join(work.dir, 'notes', 'lark.txt'), 'The lark rises over the field at noon.\n');
    const client = createJobClient({
      base: url,
      apiKey: 'test-key',
      // An older Kilde: no such route.
      fetch: async (input, init) =>
        String(input).includes('/api/v1/job-batches')
          ? new Response(JSON.stringify({ detail: 'Not Found' }), { status: 404 })
          : fetch(input, init),
    });
    const outcomes: { file: string; ok: boolean; job_id?: string }[] = [];
    await ingestWithJobs({
      client,
      files: await findFiles(['notes/lark.txt'], work.dir, { root: work.dir }),
      collection: 'older',
      userId: 'u1',
      url,
      manifest: join(work.dir, 'older-manifest.json'),
      force: false,
      concurrency: 2,
      record: (o) => outcomes.push(o),
      stage: () => undefined,
      signal: new AbortController().signal,
    });
    expect(outcomes).toMatchObject([{ file: 'notes/lark.txt', ok: true }]);
    const job = await h.app.inject({
      method: 'GET',
      url: `/api/v1/jobs/${outcomes[0]!.job_id}`,
      headers: AUTH,
    });
    expect(job.json()).toMatchObject({ state: 'done', collection_name: 'older', name: 'lark.txt' });
  });

  it('sends a batch whose files are partly in memory (read once by the client) and partly read from disk', async () => {
    await writeFile(join(work.dir, 'notes', 'kite.txt'), 'The red kite circles over the moor.\n');
    await writeFile(join(work.dir, 'notes', 'stork.txt'), 'The stork nests on the church roof.\n');
    const client = createJobClient({ base: url, apiKey: 'test-key' });
    const args = (name: string) => ({
      path: join(work.dir, 'notes', name),
      fileId: `mixed-${name}`,
      filename: name,
      collection: 'mixed',
      userId: 'u1',
      source: `notes/${name}`,
    });
    const submitted = await client.submitBatch([
      { ...args('kite.txt'), data: Buffer.from('The red kite circles over the moor.\n') },
      args('stork.txt'),
    ]);
    const end = await client.watchBatch(submitted!.batch_id, () => undefined);
    expect(end.files.map((f) => [f.name, f.state])).toEqual([
      ['kite.txt', 'done'],
      ['stork.txt', 'done'],
    ]);
    expect(embed.inputs().some((t) => t.includes('red kite'))).toBe(true);
    expect(embed.inputs().some((t) => t.includes('stork nests'))).toBe(true);
  });
});
