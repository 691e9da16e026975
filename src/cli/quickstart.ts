import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dataPiece } from '../config/index-settings.js';
import type { Env } from '../config/parse.js';
import { loadOrCreateKey } from '../embedded/api-key.js';
import { type SyncResult, syncFolder } from '../embedded/folder-sync.js';
import type { IngestPart } from '../ingest/part.js';
import { type Running, startService } from './serve.js';
import { findFiles } from './walk.js';

export const DOCS_COLLECTION = 'kilde-docs';

/** Where `npm start` listens unless HOST is set: loopback only. */
export const QUICKSTART_HOST = '127.0.0.1';
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i;

/** Kilde's own docs, next to the package (not the working directory). */
export const DOCS_DIR = fileURLToPath(new URL('../../docs/', import.meta.url));

export interface Quickstart extends Running {
  /** Settles when Kilde's docs are in the index (the server answers before that). */
  docs: Promise<SyncResult>;
}

/** `http://0.0.0.0:8000` is not something to paste into curl. */
function publicUrl(address: string): string {
  return address.replace(/^http:\/\/(0\.0\.0\.0|127\.0\.0\.1|\[::1?\])(?=:)/, 'http://localhost');
}

function banner(
  url: string,
  key: { shown: string; note: string },
  dataDir: string,
  console: boolean,
  host: string,
): string {
  const auth = `-H "Authorization: Bearer ${key.shown}"`;
  const reach = LOOPBACK.test(host)
    ? `  Listening on ${host} only: this machine. HOST=0.0.0.0 npm start listens on every interface.`
    : `  Listening on ${host} (HOST): reachable from other machines, which need the key below.`;
  return [
    '',
    `  Kilde is running at ${url}  (embedded mode; index and key in ${dataDir})`,
    reach,
    '',
    `  API key ${key.note}:`,
    `    ${key.shown}`,
    '',
    ...(console ? [`  Open the web console: ${url}/  (sign in with the key above)`, ''] : []),
    '  Ingest a file:',
    `    curl -X PUT ${url}/api/v1/ingest ${auth} -F file_id=readme -F collection_name=my-docs -F user_id=me -F file=@README.md`,
    '',
    '  Search it (and Kilde’s own docs):',
    `    curl -X POST ${url}/search ${auth} -H "Content-Type: application/json" -d '{"queries":["How do I run Kilde next to Open WebUI?"],"collection_names":["my-docs","${DOCS_COLLECTION}"],"k":3}'`,
    '',
    `  Kilde’s docs are being ingested as collection "${DOCS_COLLECTION}" in the background.`,
    '',
  ].join('\n');
}

/**
 * `npm start`: `kilde serve all` on the embedded defaults, a generated key when API_KEY is unset
 * (stored once, mode 0600), and Kilde's own docs ingested in the background after listening.
 */
export async function runQuickstart(
  env: Env,
  out: NodeJS.WritableStream = process.stdout,
): Promise<Quickstart> {
  const dataDir = resolve(dataPiece.KILDE_DATA_DIR.parse(env.KILDE_DATA_DIR));
  const given = env.API_KEY?.trim();
  const stored = given ? undefined : await loadOrCreateKey(dataDir);
  const key = given || (stored?.key as string);
  // A first run on a laptop, its key printed on screen: this machine only, as the banner's
  // `localhost` says, unless HOST asks for more. (`kilde serve` keeps the contract's 0.0.0.0, which a
  // container needs.)
  const host = env.HOST?.trim() || QUICKSTART_HOST;
  const running = await startService('all', { ...env, HOST: host, KILDE_DATA_DIR: dataDir, API_KEY: key });
  const url = publicUrl(running.address);
  out.write(
    banner(
      url,
      stored
        ? {
            shown: key,
            note: stored.created
              ? `(generated now, stored in ${stored.path}, mode 0600)`
              : `(stored in ${stored.path})`,
          }
        : { shown: '$API_KEY', note: '(from the API_KEY variable)' },
      dataDir,
      running.parts.some((p) => p.name === 'console'),
      host,
    ),
  );

  const ingest = running.parts.find((p) => p.name === 'ingest') as IngestPart;
  const docs = (async () => {
    const started = performance.now();
    // Named from the package's folder (`docs/…`), wherever it is installed: the ids stay put.
    const files = await findFiles([DOCS_DIR], process.cwd(), {
      root: dirname(DOCS_DIR.replace(/[\\/]+$/, '')),
    });
    const pipeline = ingest.pipeline();
    const result = await syncFolder({
      service: pipeline.service,
      index: pipeline.index,
      files,
      collection: DOCS_COLLECTION,
      userId: 'kilde',
      manifestPath: join(dataDir, `${DOCS_COLLECTION}.json`),
      log: running.log,
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    running.log.info({ collection: DOCS_COLLECTION, ...result, seconds }, 'docs ingested');
    out.write(
      `\n  "${DOCS_COLLECTION}" is ready: ${result.ingested} file(s) ingested (${result.chunks} chunks), ${result.unchanged} unchanged, ${result.failed.length} failed, in ${seconds} s.\n` +
        `  Try: npx kilde search "Which variables does Open WebUI need?" --collection ${DOCS_COLLECTION} --url ${url}\n\n`,
    );
    return result;
  })();
  // Failures are reported, never fatal: the server keeps serving whatever is indexed.
  docs.catch((err: unknown) => running.log.error({ err }, 'ingesting the docs failed'));
  return { ...running, docs };
}
