import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import type { Logger } from 'pino';
import { dataPiece } from '../config/index-settings.js';
import type { Env } from '../config/parse.js';
import { readStoredKey } from '../embedded/api-key.js';
import { describeCause, KildeError } from '../errors.js';
import { collectionNameProblem, normaliseCollectionName } from '../index/identifiers.js';
import type { Backend } from './backend.js';
import { CliError, debugOn } from './fail.js';

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
async function cliLogger(env: Env): Promise<Logger> {
  const [{ createLogger }, { pino }] = await Promise.all([import('../http/logger.js'), import('pino')]);
  return createLogger(
    { DEBUG: false, LOG_LEVEL_APP: env.LOG_LEVEL_APP?.trim() || (debugOn(env) ? 'debug' : 'error') },
    pino.destination(2),
  );
}

export async function backendFor(io: CliIo, remote: Remote, engine?: string): Promise<Backend> {
  const url = remote.url ?? io.env.KILDE_URL;
  if (!url) {
    noteOldDataDir(io);
    // The embedded index and its pipeline load only here: a client of a server (`--url`) needs neither.
    const { createLocalBackend } = await import('./local-backend.js');
    return createLocalBackend(io.env, await cliLogger(io.env), engine);
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
  // The client of a server loads only here: a local run needs neither it nor the jobs client.
  const { createHttpBackend } = await import('./http-backend.js');
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
  remote: Remote & {
    /** Runs before `prepare` (the local ingest's `headStart`). */
    ahead?: (b: Backend) => Promise<void>;
  },
  engine: string | undefined,
  run: (b: Backend) => Promise<void>,
): Promise<void> {
  const backend = await backendFor(io, remote, engine);
  try {
    await remote.ahead?.(backend);
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
export function collection(v: string): string {
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
