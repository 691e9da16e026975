import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, Server } from '../cli/helpers.js';
import { AUTH } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { multipartBody } from '../ingest/helpers/harness.js';

/**
 * The reference deployment's two containers: `kilde serve ingest` and `kilde serve retrieve` as
 * separate processes over one embedded LanceDB directory. Retrieval starts first, on an empty
 * directory, and must see what ingestion writes later without a restart.
 */
let dataDir: string;
let retrieve: Server;
let ingest: Server | undefined;
let retrieveUrl: string;
let ingestUrl: string;

const listening = /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"kilde listening"/;

function env(): NodeJS.ProcessEnv {
  return cleanEnv({
    API_KEY: 'test-key',
    KILDE_DATA_DIR: dataDir,
    EMBEDDING_PROVIDER: 'none',
    EXTRACTION_ENGINE: 'inprocess',
    ENABLE_QUERY_GENERATION: 'false',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
  });
}

async function search(query: string) {
  const res = await fetch(`${retrieveUrl}/search`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({ queries: [query], collection_names: ['shared'], k: 3 }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { documents: string[][]; metadatas: { file_id: string }[][] };
}

/**
 * Searches until `ok` holds: the other process's commit becomes visible once the reader re-checks the
 * table (LanceDB's read-consistency interval, 1 s by default). No deadline of its own (the test's).
 */
async function pollUntil(query: string, ok: (ids: string[]) => boolean) {
  return eventually(async () => ok((await search(query)).metadatas[0]!.map((m) => m.file_id)), 50);
}

async function upload(fileId: string, text: string) {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: 'shared', user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );
  const res = await fetch(`${ingestUrl}/api/v1/ingest`, {
    method: 'PUT',
    headers: { ...AUTH, ...headers },
    body: new Uint8Array(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'kilde-two-procs-'));
  retrieve = Server.start(['serve', 'retrieve'], env());
  retrieveUrl = (await retrieve.waitFor(listening, 20_000))[1]!;
}, 30_000);

afterAll(async () => {
  await Promise.all([retrieve?.stop(), ingest?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
});

describe('ingest and retrieve as two processes on one LanceDB directory', () => {
  it('answers empty lists before anything is ingested (the table does not exist yet)', async () => {
    expect(await search('anything')).toEqual({ documents: [[]], metadatas: [[]], distances: [[]] });
    expect(retrieve.output).toMatch(/does not exist yet/);
  });

  it('finds a document the other process ingests, without a restart', async () => {
    ingest = Server.start(['serve', 'ingest'], env());
    ingestUrl = (await ingest.waitFor(listening, 20_000))[1]!;

    await upload('heron', 'The grey heron stands motionless in the shallow marsh, waiting for fish.');
    expect(await pollUntil('heron marsh', (ids) => ids[0] === 'heron')).toBe(true);

    // A second write to the now-open table shows up as well (LanceDB re-reads the table version).
    await upload('otter', 'The otter slides down the riverbank and dives for crayfish among the reeds.');
    expect(await pollUntil('otter crayfish', (ids) => ids[0] === 'otter')).toBe(true);

    const res = await fetch(`${ingestUrl}/api/v1/documents/heron`, { method: 'DELETE', headers: AUTH });
    expect(res.status).toBe(200);
    expect(await pollUntil('heron marsh', (ids) => !ids.includes('heron'))).toBe(true);
    expect(retrieve.child.exitCode).toBeNull();
  }, 30_000);
});
