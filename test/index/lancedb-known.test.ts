import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLanceIndex } from '../../src/index/lancedb.js';
import type { PresenceQuery, VectorIndex } from '../../src/index/store.js';
import { eventually } from '../helpers/eventually.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { filePoints } from './file-points.js';

/**
 * A question under this process's own lock (`exclusive`) about a file the table has never held is
 * answered from the file_ids the process knows (lancedb-known.ts) instead of a read. The answers
 * must stay those of a read: for files of an earlier process, files journaled and not yet
 * committed, and files another process writes while this one runs. A read of a set of file_ids
 * (`scroll`) asks only for those the table may hold, and finds the same.
 */
const log = pino({ level: 'silent' });
const tempDir = tempDirs('kilde-known-');

/** One chunk of version v1 of a file in collection `c`. */
const chunk = (fileId: string) => filePoints(fileId, 'v1', 1);

const ask = (fileId: string, collectionName = 'c'): PresenceQuery => ({
  fileId,
  collectionName,
  id: `committed-${fileId}`,
  exclusive: true,
});

/** The file_ids of `fileIds` that have chunks in collection `c`, read through `scroll`. */
async function scrolled(i: VectorIndex, fileIds: string[]): Promise<string[]> {
  const page = await i.scroll({ fileIds, collectionNames: ['c'] }, { limit: 100 });
  return [...new Set(page.points.map((p) => p.meta.file_id))].sort();
}

describe('LanceDB presence from the known file_ids', () => {
  const open: VectorIndex[] = [];
  async function index(dir: string): Promise<VectorIndex & Required<Pick<VectorIndex, 'presence'>>> {
    const i = await createLanceIndex(
      { uri: dir, collection: 'ingestion_files', sparse: true, timeoutMs: 10_000 },
      { log },
    );
    open.push(i);
    await i.ensureCollection();
    if (!i.presence) throw new Error('the LanceDB adapter answers presence');
    return i as VectorIndex & Required<Pick<VectorIndex, 'presence'>>;
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((i) => i.close()));
  });

  it('answers as a read would: new files, written files, journaled files, an earlier process`s files', async () => {
    const dir = await tempDir();
    const first = await index(dir);
    await first.upsert(chunk('merged'));
    expect(await first.presence(ask('merged'))).toEqual({ chunks: true, id: false });
    expect(await first.presence(ask('merged', 'elsewhere'))).toEqual({ chunks: false, id: false });
    expect(await first.presence(ask('never'))).toEqual({ chunks: false, id: false });
    // A new file's version, journaled (not yet committed): known at once.
    await first.upsert(chunk('journaled'), { append: true });
    expect(await first.presence(ask('journaled'))).toEqual({ chunks: true, id: false });
    await first.close();
    open.splice(0);

    // A later process knows the files of the table as it finds it.
    const second = await index(dir);
    expect(await second.presence(ask('merged'))).toEqual({ chunks: true, id: false });
    expect(await second.presence(ask('journaled'))).toEqual({ chunks: true, id: false });
    expect(await second.presence(ask('never'))).toEqual({ chunks: false, id: false });
    // A read of many ids finds those the table holds, whichever way it learnt of them.
    expect(await scrolled(second, ['never', 'merged', 'journaled', 'also-never'])).toEqual([
      'journaled',
      'merged',
    ]);
    expect(await scrolled(second, ['never', 'also-never'])).toEqual([]);
    // Deleted: a read answers, and says it is gone.
    await second.deleteWhere({ fileId: 'merged' });
    expect(await second.presence(ask('merged'))).toEqual({ chunks: false, id: false });
  });

  it('sees a file another process writes after this one has answered from what it knows', async () => {
    const dir = await tempDir();
    const i = await index(dir);
    await i.upsert(chunk('parent'));
    // Answered (the file_ids known from here on), then written by the child.
    expect(await i.presence(ask('child'))).toEqual({ chunks: false, id: false });
    // More of this process's own commits between: they do not hide the child's.
    await i.upsert(chunk('parent-2'));
    const child = fileURLToPath(new URL('./lance-writer-child.ts', import.meta.url));
    await new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', child, dir], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      p.on('error', reject);
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
    });
    await i.upsert(chunk('parent-3'));
    // Seen once this reader re-checks the table (readConsistencySeconds), as a read would see it.
    await eventually(async () => (await i.presence(ask('child'))).chunks, 100);
    expect(await i.presence(ask('child'))).toEqual({ chunks: true, id: false });
    expect(await i.presence(ask('still-never'))).toEqual({ chunks: false, id: false });
    expect(await scrolled(i, ['still-never', 'child', 'parent'])).toEqual(['child', 'parent']);
  });
});
