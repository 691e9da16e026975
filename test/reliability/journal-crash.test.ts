import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../bench/lib/stats.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { AUTH, type Kilde, startKilde } from './child.js';
import { reliabilitySettings } from './settings.js';

/**
 * New files uploaded one at a time share a commit per window (src/index/lancedb-journal.ts): each is
 * answered once its version is journaled. A real `kilde serve all` takes uploads of new files, one
 * at a time and a few at once, and is SIGKILLed at a random moment, often with answered versions
 * still journaled; after the restart every answered file is there, whole and searchable, each
 * file has at most one version, and the journal is empty.
 */
const settings = reliabilitySettings('journal-crash');
const ROUNDS = settings.long ? 8 : 3;

describe('LanceDB: SIGKILL with answered uploads still journaled', { timeout: settings.timeoutMs }, () => {
  let dataDir: string;
  let tmp: string;
  let kilde: Kilde | undefined;
  const collection = 'journal_crash';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kilde-journal-crash-'));
    tmp = await mkdtemp(join(tmpdir(), 'kilde-journal-crash-tmp-'));
  });
  afterAll(async () => {
    await kilde?.kill();
    await rm(dataDir, { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
  });

  const env = () => ({
    KILDE_DATA_DIR: dataDir,
    TMPDIR: tmp,
    VECTORDB_INDEX: collection,
    CHUNK_SPLIT_BY: 'passage',
    CHUNK_SIZE: '1',
    CHUNK_OVERLAP: '0',
    ENABLE_INSPECTION_API: 'true',
    INGEST_SWEEP_GRACE: '0',
    INGEST_SWEEP_INTERVAL: '0',
  });

  const text = (fileId: string, paragraphs: number) =>
    Array.from(
      { length: paragraphs },
      (_, i) => `Paragraph ${i} of ${fileId} names item ${fileId}x${i}.`,
    ).join('\n\n');

  async function upload(k: Kilde, fileId: string, paragraphs: number): Promise<number | 'lost'> {
    const { body, headers } = multipartBody(
      { file_id: fileId, collection_name: 'kb', user_id: 'u1' },
      { name: `${fileId}.txt`, content: text(fileId, paragraphs), type: 'text/plain' },
    );
    try {
      const res = await fetch(`${k.url}/api/v1/ingest`, {
        method: 'PUT',
        headers: { ...AUTH, ...headers },
        body,
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 'lost';
    }
  }

  async function chunksOf(k: Kilde, fileId: string) {
    const res = await fetch(
      `${k.url}/api/v1/documents/${encodeURIComponent(fileId)}/chunks?limit=1000&include_content=full`,
      { headers: AUTH },
    );
    expect(res.status).toBe(200);
    return ((await res.json()) as { chunks: { split_id: number; meta: { ingest_version: string } }[] })
      .chunks;
  }

  it(`${ROUNDS} kills during uploads of new files: every answered file survives whole, nothing else half`, async () => {
    const rand = mulberry32(settings.seed ^ 0x10a7);
    const sizes = new Map<string, number>();
    const answered = new Set<string>();
    let n = 0;
    /** Restarts that found answered versions still journaled by the killed process. */
    let replays = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      kilde = await startKilde('all', env());
      const k: Kilde = kilde;
      let stop = false;
      const statuses = new Map<string, number | 'lost'>();
      // One at a time, as a chat platform's user uploads, and two more streams beside it.
      const stream = async (streamNo: number) => {
        while (!stop) {
          const fileId = `r${round}s${streamNo}f${n++}`;
          const paragraphs = 2 + Math.floor(rand() * 6);
          sizes.set(fileId, paragraphs);
          const status = await upload(k, fileId, paragraphs);
          statuses.set(fileId, status);
          if (status !== 200 && status !== 'lost') throw new Error(`${fileId}: ${status}`);
        }
      };
      const streams = [0, 1, 2].map((s) => stream(s));
      // Until a few uploads were answered, then a little longer: the kill lands inside a window.
      for (let i = 0; i < 500 && [...statuses.values()].filter((s) => s === 200).length < 5; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, rand() * 300));
      await k.kill();
      stop = true;
      await Promise.all(streams);
      for (const [f, s] of statuses) if (s === 200) answered.add(f);

      kilde = await startKilde('all', env());
      for (const [f, status] of statuses) {
        const chunks = await chunksOf(kilde, f);
        if (status === 200) expect(chunks.length, `${f}: answered 200 before the kill`).toBe(sizes.get(f));
        // Never a part: all of a version or none of it, one version.
        expect([0, sizes.get(f)]).toContain(chunks.length);
        expect(new Set(chunks.map((c) => c.meta.ingest_version)).size).toBeLessThanOrEqual(1);
      }
      if (kilde.server.output.includes('replayed the journaled new files')) replays += 1;
      await kilde.stop();
      kilde = undefined;
      expect(await readdir(join(dataDir, 'lancedb', `${collection}.kilde-journal`)).catch(() => [])).toEqual(
        [],
      );
    }
    kilde = await startKilde('all', env());
    // Searchable after all the restarts: a term of an answered file finds it.
    const some = [...answered].slice(0, 3);
    for (const f of some) {
      const res = await fetch(`${kilde.url}/search`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ queries: [`${f}x1`], collection_names: ['kb'], k: 3 }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { documents: string[][] };
      expect(body.documents[0]?.some((d) => d.includes(`${f}x1`))).toBe(true);
    }
    // The kill lands within a window of the last answers: the journal, not the table, held some.
    expect(replays).toBeGreaterThan(0);
    process.stdout.write(
      `journal crash: ${answered.size} answered uploads survived ${ROUNDS} kills, ${replays} restarts replayed the journal\n`,
    );
  });
});
