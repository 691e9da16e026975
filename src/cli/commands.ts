import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type Logger, pino } from 'pino';
import { dataPiece } from '../config/index-settings.js';
import type { Env } from '../config/parse.js';
import { readStoredKey } from '../embedded/api-key.js';
import { describeCause, KildeError } from '../errors.js';
import { createLogger } from '../http/logger.js';
import { collectionNameProblem, fileIdFor, normaliseCollectionName } from '../index/identifiers.js';
import type { Backend } from './backend.js';
import { CliError, debugOn } from './fail.js';
import { createHttpBackend } from './http-backend.js';
import type { JobClient } from './job-client.js';
import { failuresByCode, ingestWithJobs, manifestPath } from './job-ingest.js';
import { createLocalBackend } from './local-backend.js';
import { DEFAULT_PASS_FILES, passesOf } from './passes.js';
import { createProgress } from './progress.js';
import { renderHits } from './render.js';
import { type FoundFile, findFiles } from './walk.js';

export interface CliIo {
  env: Env;
  out: NodeJS.WriteStream;
  err: NodeJS.WritableStream;
}

export interface Remote {
  url?: string;
  apiKey?: string;
}

/** Logs go to stderr, errors only unless LOG_LEVEL_APP/DEBUG ask for more: stdout is the answer. */
function cliLogger(env: Env): Logger {
  return createLogger(
    { DEBUG: false, LOG_LEVEL_APP: env.LOG_LEVEL_APP?.trim() || (debugOn(env) ? 'debug' : 'error') },
    pino.destination(2),
  );
}

export async function backendFor(io: CliIo, remote: Remote, engine?: string): Promise<Backend> {
  const url = remote.url ?? io.env.KILDE_URL;
  if (!url) {
    noteOldDataDir(io);
    return createLocalBackend(io.env, cliLogger(io.env), engine);
  }
  if (!/^https?:\/\//i.test(url)) {
    throw new CliError(
      `--url "${url}" has no http:// or https:// scheme: use --url http://${url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')}`,
      2,
    );
  }
  if (engine) {
    throw new CliError(
      '--engine works on the embedded index only; a server extracts with its EXTRACTION_ENGINE',
      2,
    );
  }
  // On the machine that ran `npm start`, the generated key is found without pasting it.
  const apiKey =
    remote.apiKey ??
    io.env.KILDE_API_KEY ??
    io.env.API_KEY ??
    (await readStoredKey(resolve(dataPiece.KILDE_DATA_DIR.parse(io.env.KILDE_DATA_DIR))));
  if (!apiKey) throw new CliError('--url needs --api-key (or KILDE_API_KEY)', 2);
  return createHttpBackend({ url, apiKey });
}

/**
 * The data directory no longer depends on the folder the command runs in (default `~/.kilde`). A
 * `./.kilde` here is most likely an index made by an older Kilde: say where the index is now.
 */
function noteOldDataDir(io: CliIo): void {
  if (io.env.KILDE_DATA_DIR?.trim()) return;
  const here = resolve('.kilde');
  const home = resolve(dataPiece.KILDE_DATA_DIR.parse(undefined));
  if (here !== home && existsSync(join(here, 'lancedb'))) {
    io.err.write(
      `kilde: note: ${here} is not used; the index is in ${home} (set KILDE_DATA_DIR=${here} to use that one)\n`,
    );
  }
}

/** Opens the backend, runs the command, and always closes it (the index, the in-process app). */
export async function withBackend(
  io: CliIo,
  remote: Remote,
  engine: string | undefined,
  run: (b: Backend) => Promise<void>,
): Promise<void> {
  const backend = await backendFor(io, remote, engine);
  try {
    await backend.prepare();
    await run(backend);
  } finally {
    await backend.close();
  }
}

/** A search or listing of a collection nothing was ingested into is a mistake worth saying (exit 1). */
export async function requireCollections(backend: Backend, names: readonly string[]): Promise<void> {
  const missing = await backend.missingCollections(names);
  if (missing.length === 0) return;
  const where = backend.where ? ` in ${backend.where}` : '';
  const list = missing.map((n) => `"${n}"`).join(', ');
  throw new CliError(
    missing.length === names.length
      ? `collection ${list} does not exist${where}: nothing was ingested into it (kilde ingest <files> --collection ${missing[0]})`
      : `collection ${list} does not exist${where}; searching the others would hide that`,
  );
}

export function positiveInt(name: string, max: number) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidArgumentError(`${name} must be 1..${max}`);
    return n;
  };
}

/** One collection name, held to the rule ingest and search apply (a usage error otherwise). */
function collection(v: string): string {
  const problem = collectionNameProblem(v.trim());
  if (problem) throw new InvalidArgumentError(problem);
  return normaliseCollectionName(v.trim());
}

/** `--collection a,b` or repeated `--collection a --collection b`. */
export function collections(v: string, prev: string[] = []): string[] {
  return [
    ...prev,
    ...v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map(collection),
  ];
}

export const remoteOptions = (c: Command) =>
  c
    .option(
      '--url <url>',
      'a running Kilde, e.g. http://localhost:8000 (default: KILDE_URL; unset: the embedded index)',
    )
    .option(
      '--api-key <key>',
      'bearer key of that server (default: KILDE_API_KEY, API_KEY, or the stored key)',
    );

/** The failure and its causes (`Embedding failed: … ECONNREFUSED 127.0.0.1:9`): this is the operator's own machine. */
export function errorMessage(err: unknown): { error: string; code?: string } {
  const code =
    typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
      ? err.code
      : undefined;
  const causes = describeCause(err);
  const detail = err instanceof KildeError ? err.detail : undefined;
  const error = detail && !causes.includes(detail) ? `${causes}: ${detail}` : causes;
  return code ? { error, code } : { error };
}

/**
 * `kilde ingest … --url`: one job per file on the server, followed through its events; Ctrl-C stops
 * following (the server keeps running what was submitted) and the same command resumes.
 */
async function ingestJobs(
  io: CliIo,
  jobs: JobClient,
  url: string,
  files: FoundFile[],
  o: { collection: string; concurrency: number; user: string; force?: boolean },
  progress: ReturnType<typeof createProgress>,
): Promise<void> {
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
      stage: (file, job) =>
        progress.status(file, job.state === 'running' ? (job.stage ?? 'running') : job.state),
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

export function registerCommands(program: Command, io: CliIo): void {
  remoteOptions(
    program
      .command('ingest')
      .description('ingest files, folders or globs into a collection (re-ingesting replaces each file)')
      .argument('<paths...>', 'files, folders (walked recursively) or globs')
      .requiredOption('-c, --collection <name>', 'collection name', collection)
      .option('--engine <engine>', 'extraction engine (local only; default EXTRACTION_ENGINE)')
      // 8: enough for the server's group commit to merge the writes of small files (~7x 2's files/s)
      .option('--concurrency <n>', 'with --url: files in flight', positiveInt('--concurrency', 64), 8)
      .option(
        '--batch <n>',
        'local: most files per pipeline pass (one chunking task, one embedding call, one commit); files over 1 MiB go alone',
        positiveInt('--batch', 1024),
        DEFAULT_PASS_FILES,
      )
      .option('--user <id>', 'user_id recorded with each chunk', 'kilde-cli')
      .option('--force', 'with --url: submit every file again, also those a previous run ingested unchanged'),
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
      },
    ) => {
      const files = await findFiles(paths);
      if (files.length === 0) throw new CliError(`no files match ${paths.join(' ')}`, 2);
      await withBackend(io, o, o.engine, async (backend) => {
        const progress = createProgress(files.length, io.out.isTTY === true, io.out);
        if (backend.jobs && backend.url) {
          await ingestJobs(io, backend.jobs, backend.url, files, o, progress);
          return;
        }
        const argsOf = (file: (typeof files)[number]) => ({
          path: file.path,
          fileId: fileIdFor(o.collection, file.relative),
          filename: file.path.split(/[\\/]/).at(-1) ?? file.relative,
          collection: o.collection,
          userId: o.user,
          source: file.relative,
        });
        const record = (
          file: (typeof files)[number],
          started: number,
          r: PromiseSettledResult<{ chunks: number }>,
        ) => {
          const base = {
            file: file.relative,
            file_id: fileIdFor(o.collection, file.relative),
            ms: Math.round(performance.now() - started),
          };
          if (r.status === 'fulfilled') progress.record({ ...base, ok: true, chunks: r.value.chunks });
          else progress.record({ ...base, ok: false, chunks: 0, ...errorMessage(r.reason) });
        };
        const ingestMany = backend.ingestMany?.bind(backend);
        if (ingestMany) {
          // Local: many files per pipeline pass (one chunking task, one embedding call, one group
          // commit), two passes in flight so one converts while the other writes.
          const passes = await passesOf(files, o.batch);
          let next = 0;
          const worker = async () => {
            for (let i = next++; i < passes.length; i = next++) {
              const pass = passes[i]!;
              const started = performance.now();
              const settled = await ingestMany(pass.map(argsOf));
              pass.forEach((file, k) => {
                record(file, started, settled[k]!);
              });
            }
          };
          await Promise.all(Array.from({ length: Math.min(2, passes.length) }, worker));
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
      });
    },
  );

  remoteOptions(
    program
      .command('search')
      .description('search one or more collections')
      .argument('<query>', 'what to look for')
      .requiredOption('-c, --collection <name>', 'collection(s), comma-separated or repeated', collections)
      .option('-k <k>', 'number of hits', positiveInt('-k', 100), 5)
      .option('--json', 'print the POST /search response as JSON'),
  ).action(async (query: string, o: Remote & { collection: string[]; k: number; json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      await requireCollections(backend, o.collection);
      const result = await backend.search({ queries: [query], collection_names: o.collection, k: o.k });
      const ansi = io.out.isTTY === true && io.env.NO_COLOR === undefined;
      io.out.write(o.json ? `${JSON.stringify(result)}\n` : renderHits(result, query, ansi));
    });
  });

  remoteOptions(
    program
      .command('extract')
      .description('extract a file and print its text and metadata (nothing is stored)')
      .argument('<file>', 'the document')
      .option('--engine <engine>', 'extraction engine (default EXTRACTION_ENGINE)')
      .option('--json', 'print the POST /api/v1/extract documents as JSON'),
  ).action(async (file: string, o: Remote & { engine?: string; json?: boolean }) => {
    // The engine goes in the request body over HTTP, so it is not a local-only option here.
    const local = !(o.url ?? io.env.KILDE_URL);
    await withBackend(io, o, local ? o.engine : undefined, async (backend) => {
      const result = await backend.extract(resolve(file), o.engine);
      if (o.json) {
        io.out.write(`${JSON.stringify(result, null, 2)}\n`);
        return;
      }
      for (const [i, doc] of (
        result.documents as { text: string; metadata: Record<string, unknown> }[]
      ).entries()) {
        io.out.write(`--- document ${i + 1} (engine ${result.engine}) ---\n`);
        for (const [key, value] of Object.entries(doc.metadata)) {
          if (value !== undefined)
            io.out.write(`${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
        }
        io.out.write(`\n${doc.text}\n`);
      }
    });
  });

  const documents = program.command('documents').description('list, inspect or delete indexed documents');
  remoteOptions(
    documents
      .command('list')
      .description('documents of a collection')
      .requiredOption('-c, --collection <name>', 'collection name', collection)
      .option('--json', 'print JSON'),
  ).action(async (o: Remote & { collection: string; json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      await requireCollections(backend, [o.collection]);
      const docs = await backend.listDocuments(o.collection);
      if (o.json) {
        io.out.write(`${JSON.stringify(docs)}\n`);
        return;
      }
      for (const d of docs)
        io.out.write(`${d.file_id}  ${String(d.chunks).padStart(5)} chunks  ${d.source ?? d.name ?? ''}\n`);
      io.out.write(`${docs.length} document(s) in "${o.collection}"\n`);
    });
  });
  remoteOptions(
    documents
      .command('delete')
      .description('delete every chunk of a file (every version, every collection)')
      .argument('<file_id>', 'the file_id (see `documents list`)'),
  ).action(async (fileId: string, o: Remote) => {
    await withBackend(io, o, undefined, async (backend) => {
      io.out.write(`${JSON.stringify(await backend.deleteDocument(fileId))}\n`);
    });
  });
  remoteOptions(
    documents
      .command('versions')
      .description("a file's versions: the live one first, then those KEEP_VERSIONS kept, newest first")
      .argument('<file_id>', 'the file_id (see `documents list`)')
      .option('-c, --collection <name>', 'collection (default: the one the file is live in)', collection)
      .option('--json', 'print JSON'),
  ).action(async (fileId: string, o: Remote & { collection?: string; json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      const body = await backend.versions(fileId, o.collection);
      if (o.json) {
        io.out.write(`${JSON.stringify(body)}\n`);
        return;
      }
      const versions = (body.versions ?? []) as {
        version: string;
        live: boolean;
        chunks: number;
        written_at: string | null;
        source: string | null;
        content_hash: string;
      }[];
      for (const v of versions) {
        io.out.write(
          `${v.live ? '*' : ' '} ${v.version}  ${String(v.chunks).padStart(5)} chunks  ${v.written_at ?? '(unknown time)'}  ${v.content_hash.slice(0, 12)}  ${v.source ?? ''}\n`,
        );
      }
      io.out.write(
        `${versions.length} version(s) of ${fileId} in "${String(body.collection_name)}" (* live)\n`,
      );
    });
  });
  remoteOptions(
    documents
      .command('restore')
      .description('make a kept version of a file live again (atomically; the live one is kept in its place)')
      .argument('<file_id>', 'the file_id')
      .argument('<version>', 'the version (see `documents versions`)')
      .option('-c, --collection <name>', 'collection (default: the one the file is live in)', collection),
  ).action(async (fileId: string, version: string, o: Remote & { collection?: string }) => {
    await withBackend(io, o, undefined, async (backend) => {
      io.out.write(`${JSON.stringify(await backend.restore(fileId, version, o.collection))}\n`);
    });
  });
  remoteOptions(
    documents
      .command('chunks')
      .description("a file's stored chunks and their metadata")
      .argument('<file_id>', 'the file_id (see `documents list`)')
      .option('--limit <n>', 'chunks per page', positiveInt('--limit', 1000), 50)
      .option('--offset <cursor>', 'next_offset of the previous page')
      .addOption(
        new Option('--content <mode>', 'include chunk text')
          .choices(['false', 'preview', 'full'])
          .default('preview'),
      ),
  ).action(async (fileId: string, o: Remote & { limit: number; offset?: string; content: string }) => {
    await withBackend(io, o, undefined, async (backend) => {
      const query: Record<string, string> = { limit: String(o.limit), include_content: o.content };
      if (o.offset) query.offset = o.offset;
      io.out.write(`${JSON.stringify(await backend.chunks(fileId, query), null, 2)}\n`);
    });
  });
}
