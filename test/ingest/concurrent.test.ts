import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestSchema } from '../../src/config/ingest.js';
import { parseConfig } from '../../src/config/parse.js';
import { type BuiltPipeline, buildIngestPipeline } from '../../src/ingest/build.js';
import { pointsOf, versionsOf } from './helpers/harness.js';

/**
 * Many files at once through the real service on LanceDB, where the adapter group-commits the writes
 * of different files: every file must still end with exactly its own newest version.
 */

let work: string;
let built: BuiltPipeline;
const files = Array.from({ length: 10 }, (_, i) => `doc-${i}`);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kilde-ingest-concurrent-'));
  const config = parseConfig(ingestSchema, {
    API_KEY: 'test-key-concurrent-ingest',
    KILDE_DATA_DIR: work,
    EMBEDDING_PROVIDER: 'none',
    CHUNK_SIZE: '20',
    CHUNK_OVERLAP: '0',
  });
  built = await buildIngestPipeline(config, { log: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await built?.close();
  await rm(work, { recursive: true, force: true });
});

/** Writes the file now; the returned function starts the ingest (so tests control arrival order). */
async function prepare(fileId: string, text: string) {
  const path = join(work, `${fileId}-${Math.random().toString(36).slice(2)}.md`);
  await writeFile(path, text);
  return () => start(fileId, path);
}

async function ingest(fileId: string, text: string) {
  return (await prepare(fileId, text))();
}

function start(fileId: string, path: string) {
  return built.service.ingest(
    {
      fileId,
      filename: `${fileId}.md`,
      collectionName: 'docs',
      collectionType: 'file',
      userId: 'u1',
      overwrite: true,
      source: `${fileId}.md`,
    },
    async () => ({ path, filename: `${fileId}.md`, bytes: (await stat(path)).size }),
  );
}

const text = (fileId: string, round: number, words: number) =>
  `# ${fileId}\n\n${Array.from({ length: words }, (_, i) => `${fileId}-r${round}-w${i}`).join(' ')}\n`;

describe('concurrent ingests on LanceDB', () => {
  it('leaves each file with exactly its newest version, and a failing file its old one', async () => {
    const first = await Promise.all(files.map((f) => ingest(f, text(f, 1, 30))));
    // Round two: every file changes size; doc-3 becomes unreadable (no text) and must fail alone.
    const second = await Promise.allSettled(
      files.map((f, i) => ingest(f, f === 'doc-3' ? '   \n' : text(f, 2, 40 + i * 10))),
    );
    for (const [i, f] of files.entries()) {
      const points = await pointsOf(built.index, f);
      const outcome = second[i]!;
      if (f === 'doc-3') {
        expect(outcome.status).toBe('rejected');
        expect(versionsOf(points)).toEqual([first[i]!.ingestVersion]);
        expect(points).toHaveLength(first[i]!.chunksCount);
        continue;
      }
      if (outcome.status !== 'fulfilled') throw new Error(`${f} failed: ${String(outcome.reason)}`);
      expect(versionsOf(points)).toEqual([outcome.value.ingestVersion]);
      expect(points).toHaveLength(outcome.value.chunksCount);
      expect(points.every((p) => p.content.includes(`${f}-r2-`))).toBe(true);
    }
  });

  it('serialises concurrent ingests of one file_id: the last one wins, nothing is left over', async () => {
    // Files are written first, so the three ingests reach the lock in this order.
    const starts = [];
    for (const r of [1, 2, 3]) starts.push(await prepare('same', text('same', r, 20 * r)));
    const runs = await Promise.all(starts.map((go) => go()));
    const points = await pointsOf(built.index, 'same');
    expect(versionsOf(points)).toEqual([runs[2]!.ingestVersion]);
    expect(points).toHaveLength(runs[2]!.chunksCount);
  });
});
