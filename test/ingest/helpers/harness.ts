import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Clock } from '../../../src/clock.js';
import { type IngestConfig, ingestSchema } from '../../../src/config/ingest.js';
import { buildApp, type KildeApp } from '../../../src/http/app.js';
import { createLogger } from '../../../src/http/logger.js';
import type { StoredPoint } from '../../../src/index/contract.js';
import type { VectorIndex } from '../../../src/index/store.js';
import { createIngestPart, type IngestPart } from '../../../src/ingest/part.js';
import { AUTH, logSink, testConfig } from '../../helpers/app.js';

export { DANISH_CORPUS as DANISH, DOCUMENTS as FIXTURES, TOKENIZER } from '../../fixtures/index.js';

export interface Harness {
  app: KildeApp;
  part: IngestPart;
  config: IngestConfig;
  index: VectorIndex;
  logs: ReturnType<typeof logSink>;
  dataDir: string;
  /**
   * What another process sees once this one's commit window has passed: on LanceDB, new files are
   * journaled and appended together (src/index/lancedb-journal.ts); a read in this process commits
   * them now. Call it before opening a second index (a retrieval app) on the same data directory.
   */
  settle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `kilde serve ingest` in process on the embedded defaults: LanceDB in a temp dir, the inprocess
 * extractor, real chunker and BM25. Env entries override (e.g. a fake embedding server).
 */
export async function startIngest(
  env: Record<string, string> = {},
  opts: {
    start?: boolean;
    dataDir?: string;
    fetch?: typeof fetch;
    /** Times the worker pool's limits and the version ledger (a ManualClock in tests that need it). */
    clock?: Clock;
    /** An index to use instead of opening one (the caller closes it). */
    index?: VectorIndex;
  } = {},
): Promise<Harness> {
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'kilde-ingest-test-')));
  const config = testConfig(ingestSchema, {
    KILDE_DATA_DIR: dataDir,
    EMBEDDING_PROVIDER: 'none',
    EXTRACTION_ENGINE: 'inprocess',
    ENABLE_SPARSE_EMBEDDINGS: 'true',
    ENABLE_INSPECTION_API: 'true',
    ...env,
  });
  const logs = logSink();
  const log = createLogger({ ...config, LOG_LEVEL_APP: 'debug' }, logs.stream);
  const part = createIngestPart(config, {
    log,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.index ? { index: opts.index } : {}),
  });
  const app = await buildApp(config, { logger: log, parts: [part] });
  if (opts.start !== false) await part.start?.();
  return {
    app,
    part,
    config,
    get index() {
      return part.pipeline().index;
    },
    logs,
    dataDir,
    async settle() {
      await part.pipeline().index.count({});
    },
    async close() {
      await app.close();
      if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Every stored point of a file, in split order. */
export async function pointsOf(index: VectorIndex, fileId: string): Promise<StoredPoint[]> {
  const all: StoredPoint[] = [];
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { fileId, chunksOnly: true },
      { limit: 500, ...(cursor ? { cursor } : {}) },
    );
    all.push(...page.points);
    cursor = page.next;
  } while (cursor);
  return all.sort((a, b) => a.meta.split_id - b.meta.split_id);
}

export function versionsOf(points: readonly StoredPoint[]): string[] {
  return [...new Set(points.map((p) => p.meta.ingest_version))];
}

export type MultipartFile = { name: string; content: Buffer | string; type?: string };

/**
 * A multipart body as the chat platform's client builds it (fields, then the file part); several
 * files (a job batch) are several `file` parts in order.
 */
export function multipartBody(
  fields: Record<string, string>,
  files?: MultipartFile | MultipartFile[],
): { body: Buffer; headers: Record<string, string> } {
  const boundary = `----kilde${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  for (const file of files === undefined ? [] : Array.isArray(files) ? files : [files]) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n` +
          `Content-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    body: Buffer.concat(chunks),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

/**
 * Uploads one file with `PUT /api/v1/ingest` as the chat platform does (the form's `fields`, then
 * the file part) and expects 200; `auth` is the bearer header, the test key by default.
 */
export async function uploadFile(
  app: KildeApp,
  fields: Record<string, string>,
  file: { name: string; content: Buffer | string; type?: string },
  auth: Record<string, string> = AUTH,
): Promise<void> {
  const { body, headers } = multipartBody(fields, file);
  const res = await app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...auth, ...headers },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
}
