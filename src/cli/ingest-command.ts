import { resolve } from 'node:path';
import type { Command } from 'commander';
import { dataPiece } from '../config/index-settings.js';
import { fileIdFor } from '../index/identifiers.js';
import type { Backend } from './backend.js';
import {
  type CliIo,
  collection,
  errorMessage,
  positiveInt,
  type Remote,
  remoteOptions,
  withBackend,
} from './commands.js';
import { CliError } from './fail.js';
import type { JobClient } from './job-client.js';
import { DEFAULT_PASS_FILES, ingestEnv, passesOf } from './passes.js';
import { createProgress } from './progress.js';
import { type FoundFile, findFiles } from './walk.js';

/* `kilde ingest`: local passes of many files, or job batches on a server (`--url`). */

/** Local passes in flight: one converts while the other writes. */
const PASSES_IN_FLIGHT = 2;

/**
 * `kilde ingest … --url`: job batches on the server (one job per file on one without them), followed
 * through their events; Ctrl-C stops following (the server keeps running what was submitted) and the
 * same command resumes.
 */
async function ingestJobs(
  io: CliIo,
  jobs: JobClient,
  url: string,
  files: FoundFile[],
  o: { collection: string; concurrency: number; user: string; force?: boolean },
  progress: ReturnType<typeof createProgress>,
): Promise<void> {
  // Loaded by a client of a server only (≈ 5 ms of a local run's start).
  const { failuresByCode, ingestWithJobs, manifestPath } = await import('./job-ingest.js');
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  process.once('SIGINT', onSigint);
  try {
    const dataDir = resolve(dataPiece.KILDE_DATA_DIR.parse(io.env.KILDE_DATA_DIR));
    await ingestWithJobs({
      client: jobs,
      files,
      collection: o.collection,
      userId: o.user,
      url,
      manifest: manifestPath(dataDir, url, o.collection),
      force: o.force === true,
      concurrency: o.concurrency,
      record: (outcome) => progress.record(outcome),
      stage: (file, status) => progress.status(file, status),
      signal: stop.signal,
    });
  } finally {
    process.off('SIGINT', onSigint);
  }
  const summary = progress.finish();
  if (io.out.isTTY !== true) io.out.write(`${JSON.stringify({ summary })}\n`);
  const done = summary.ok + summary.failed;
  io.err.write(
    `ingested ${summary.ok} of ${done} file(s) into "${o.collection}": ${summary.chunks} chunks in ${summary.seconds} s` +
      (summary.skipped > 0 ? ` (${summary.skipped} unchanged, skipped)` : '') +
      (summary.failed > 0 ? `; ${summary.failed} failed:\n` : '\n'),
  );
  if (summary.failed > 0) {
    const byCode = failuresByCode(summary.failures);
    io.err.write(`  by code: ${byCode.map(([code, n]) => `${code} ×${n}`).join(', ')}\n`);
    for (const f of summary.failures)
      io.err.write(`  ${f.file}: ${f.error}${f.code ? ` (${f.code})` : ''}\n`);
    process.exitCode = 1;
  }
  if (stop.signal.aborted) {
    io.err.write(
      `interrupted after ${done} of ${files.length} file(s); jobs already submitted keep running on the server. Run the same command again to resume.\n`,
    );
    process.exitCode = 130;
  }
}

/**
 * A local ingest starts its pipeline's first extraction worker before anything else (src/pool/
 * pool-process.ts `startEarly`): its start overlaps the walk, the configuration, opening the index
 * and building the pipeline, whose pool then takes it. A heap limit that does not parse starts none
 * (the configuration reports it). Once the files are known (`found`), a worker reading PDFs with
 * PDFium loads it at once, while this process builds the pool that will send them.
 */
async function startWorkerEarly(env: CliIo['env']): Promise<(found: readonly FoundFile[]) => void> {
  const [{ extractionLimitsPiece }, { INGEST_POOL }, { preloadEarly, startEarly }] = await Promise.all([
    import('../config/extraction.js'),
    import('../ingest/pool.js'),
    import('../pool/pool-process.js'),
  ]);
  const heap = extractionLimitsPiece.EXTRACTION_MAX_HEAP_MB.safeParse(env.EXTRACTION_MAX_HEAP_MB);
  if (heap.success) startEarly(INGEST_POOL.worker, heap.data);
  const reader = extractionLimitsPiece.EXTRACTION_PDF_READER.safeParse(env.EXTRACTION_PDF_READER);
  return (found) => {
    if (reader.success && reader.data === 'pdfium' && found.some((f) => /\.pdf$/i.test(f.path)))
      preloadEarly();
  };
}

export function registerIngestCommand(program: Command, io: CliIo): void {
  remoteOptions(
    program
      .command('ingest')
      .description('ingest files, folders or globs into a collection (re-ingesting replaces each file)')
      .argument('<paths...>', 'files, folders (walked recursively) or globs')
      .requiredOption('-c, --collection <name>', 'collection name', collection)
      .option('--engine <engine>', 'extraction engine (local only; default EXTRACTION_ENGINE)')
      // 8: enough for the server's group commit to merge the writes of small files (~7x 2's files/s)
      .option(
        '--concurrency <n>',
        'with --url against a server without job batches: files in flight',
        positiveInt('--concurrency', 64),
        8,
      )
      .option(
        '--batch <n>',
        'local: most files per pipeline pass (one chunking task, one embedding call, one commit); files over 1 MiB go alone',
        positiveInt('--batch', 1024),
        DEFAULT_PASS_FILES,
      )
      .option('--user <id>', 'user_id recorded with each chunk', 'kilde-cli')
      .option(
        '--root <dir>',
        "the folder documents are named from (their path, hence their file_id); default: each file's repository (the folder above it holding .git), else /",
      )
      .option('--force', 'with --url: submit every file again, also those a previous run ingested unchanged')
      .option(
        '--no-settle',
        'local: exit without indexing the new chunks (the full-text and vector indexes catch up at a later ingest; search meanwhile scans them)',
      ),
  ).action(
    async (
      paths: string[],
      o: Remote & {
        collection: string;
        engine?: string;
        concurrency: number;
        batch: number;
        user: string;
        force?: boolean;
        settle: boolean;
        root?: string;
      },
    ) => {
      const found = (o.url ?? io.env.KILDE_URL) ? undefined : await startWorkerEarly(io.env);
      const files = await findFiles(paths, process.cwd(), o.root === undefined ? {} : { root: o.root });
      found?.(files);
      if (files.length === 0) throw new CliError(`no files match ${paths.join(' ')}`, 2);
      // A small job on one extraction worker (passes.ts `ONE_WORKER_BYTES`); a server decides its own.
      const local = { ...io, env: ingestEnv(io.env, files) };
      let passes: (typeof files)[] | undefined;
      /** Local: the first passes' files are read while the index opens (`Backend.headStart`). */
      const ahead = async (backend: Backend) => {
        if (!backend.ingestMany || !backend.headStart) return;
        passes = await passesOf(files, o.batch);
        await backend.headStart(passes.slice(0, PASSES_IN_FLIGHT).map((pass) => pass.map(argsOf)));
      };
      const argsOf = (file: (typeof files)[number]) => ({
        path: file.path,
        fileId: fileIdFor(o.collection, file.relative),
        filename: file.path.split(/[\\/]/).at(-1) ?? file.relative,
        collection: o.collection,
        userId: o.user,
        source: file.relative,
        legacy: file.legacy,
      });
      await withBackend(local, { ...o, ahead }, o.engine, async (backend) => {
        const progress = createProgress(files.length, io.out.isTTY === true, io.out);
        if (backend.jobs && backend.url) {
          await ingestJobs(io, backend.jobs, backend.url, files, o, progress);
          return;
        }
        const record = (
          file: (typeof files)[number],
          started: number,
          r: PromiseSettledResult<{ chunks: number; fileId?: string }>,
        ) => {
          const base = {
            file: file.relative,
            file_id:
              (r.status === 'fulfilled' ? r.value.fileId : undefined) ??
              fileIdFor(o.collection, file.relative),
            ms: Math.round(performance.now() - started),
          };
          if (r.status === 'fulfilled') progress.record({ ...base, ok: true, chunks: r.value.chunks });
          else progress.record({ ...base, ok: false, chunks: 0, ...errorMessage(r.reason) });
        };
        const ingestMany = backend.ingestMany?.bind(backend);
        if (ingestMany) {
          // Local: many files per pipeline pass (one chunking task, one embedding call, one group
          // commit), two passes in flight so one converts while the other writes.
          const all = passes ?? (await passesOf(files, o.batch));
          let next = 0;
          const worker = async () => {
            for (let i = next++; i < all.length; i = next++) {
              const pass = all[i]!;
              const started = performance.now();
              const settled = await ingestMany(pass.map(argsOf));
              pass.forEach((file, k) => {
                record(file, started, settled[k]!);
              });
            }
          };
          await Promise.all(Array.from({ length: Math.min(PASSES_IN_FLIGHT, all.length) }, worker));
        } else {
          let next = 0;
          const worker = async () => {
            for (let i = next++; i < files.length; i = next++) {
              const file = files[i] as (typeof files)[number];
              const started = performance.now();
              const r = await backend.ingest(argsOf(file)).then(
                (value) => ({ status: 'fulfilled' as const, value }),
                (reason: unknown) => ({ status: 'rejected' as const, reason }),
              );
              record(file, started, r);
            }
          };
          await Promise.all(Array.from({ length: Math.min(o.concurrency, files.length) }, worker));
        }
        const summary = progress.finish();
        if (io.out.isTTY !== true) io.out.write(`${JSON.stringify({ summary })}\n`);
        io.err.write(
          `ingested ${summary.ok} of ${summary.ok + summary.failed} file(s) into "${o.collection}": ${summary.chunks} chunks in ${summary.seconds} s` +
            (summary.failed > 0 ? `; ${summary.failed} failed:\n` : '\n'),
        );
        for (const f of summary.failures)
          io.err.write(`  ${f.file}: ${f.error}${f.code ? ` (${f.code})` : ''}\n`);
        if (summary.failed > 0) process.exitCode = 1;
        // The rows just written join the full-text and vector indexes before this process exits.
        if (o.settle && summary.ok > 0 && backend.settle) {
          const started = performance.now();
          if (await backend.settle()) {
            io.err.write(
              `indexed the new chunks in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
            );
          }
        }
      });
    },
  );
}
