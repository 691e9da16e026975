import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLanceIndex, type LanceIndexOptions } from '../../src/index/lancedb.js';
import type { VectorIndex } from '../../src/index/store.js';
import { commitVersion } from '../../src/versions/publish.js';
import { writeVersion } from '../../src/versions/write.js';
import { ManualClock } from '../helpers/clock.js';
import { eventually } from '../helpers/eventually.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { fileVersion } from './journal-points.js';

/**
 * The commit window of new files (src/index/lancedb-journal.ts): versions of files with nothing in
 * the table yet are journaled and acknowledged, and a window's worth is appended in one commit. Read
 * through the index in this process, they are there at once; the table's own version count (read
 * through a connection of its own) shows how many commits they cost; a process killed with versions
 * journaled leaves them to the next one.
 */

const log = pino({ level: 'silent' });
const tempDir = tempDirs('kilde-lance-journal-');
const TABLE = 'ingestion_files';

/** The table's version number and row count, as a separate connection (another process) sees them. */
async function fromOutside(dir: string): Promise<{ version: number; rows: number }> {
  const db = await connect(dir);
  try {
    const table = await db.openTable(TABLE);
    const out = { version: await table.version(), rows: await table.countRows() };
    table.close();
    return out;
  } finally {
    db.close();
  }
}

const unfenced = { assertHeld: async () => undefined, claim: async () => 0 };

describe('LanceDB commit window for new files', () => {
  const open: VectorIndex[] = [];
  async function index(dir: string, options: LanceIndexOptions = {}): Promise<VectorIndex> {
    const i = await createLanceIndex(
      { uri: dir, collection: TABLE, sparse: true, timeoutMs: 10_000 },
      { log },
      options,
    );
    open.push(i);
    await i.ensureCollection();
    return i;
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((i) => i.close()));
  });

  it('20 new files written at once cost one commit, and this process reads every row at once', async () => {
    const dir = await tempDir();
    const i = await index(dir, { clock: new ManualClock() });
    const before = await fromOutside(dir);
    const written = await Promise.all(
      Array.from({ length: 20 }, (_, k) => writeVersion(i, fileVersion(`f${k}`, 'v1', 3))),
    );
    expect(written.every((w) => w.writing === false)).toBe(true);
    // Acknowledged, journaled: not in the table yet for another process.
    expect(await fromOutside(dir)).toEqual(before);
    // A read here commits the window first: all 20 files, 3 chunks each and a `committed` entry.
    expect(await i.count({ collectionNames: ['c'] })).toBe(60);
    expect(await i.count({ reserved: 'committed' })).toBe(20);
    const after = await fromOutside(dir);
    expect(after.version - before.version).toBe(1);
    expect(after.rows - before.rows).toBe(80);
    expect(await readdir(join(dir, `${TABLE}.kilde-journal`))).toEqual([]);
  });

  it('reads arriving while the window commits wait for it', async () => {
    const dir = await tempDir();
    const i = await index(dir, { clock: new ManualClock() });
    for (let k = 0; k < 8; k++) await writeVersion(i, fileVersion(`w${k}`, 'v1', 2));
    // The first read starts the commit; the others find it running and must not read before it lands.
    const counts = await Promise.all(
      Array.from({ length: 8 }, (_, k) => i.count({ fileId: `w${k}`, chunksOnly: true })),
    );
    expect(counts).toEqual(Array.from({ length: 8 }, () => 2));
  });

  it('one upload at a time: a window of them is one commit, made when the window closes', async () => {
    const dir = await tempDir();
    const clock = new ManualClock();
    const i = await index(dir, { clock, commitWindowMs: 500 });
    const before = await fromOutside(dir);
    for (let k = 0; k < 10; k++) await writeVersion(i, fileVersion(`one${k}`, 'v1', 2));
    expect(await fromOutside(dir)).toEqual(before);
    clock.advance(500);
    const after = await eventually(async () => {
      const now = await fromOutside(dir);
      return now.rows > before.rows ? now : undefined;
    });
    expect(after.rows - before.rows).toBe(30);
    expect(after.version - before.version).toBe(1);
  });

  it('a file ingested again while its first version is journaled keeps only the new one', async () => {
    const dir = await tempDir();
    const i = await index(dir, { clock: new ManualClock() });
    await writeVersion(i, fileVersion('other', 'v1', 2));
    await writeVersion(i, fileVersion('same', 'v1', 4));
    await commitVersion(
      i,
      { fileId: 'same', collectionName: 'c', version: 'v2' },
      fileVersion('same', 'v2', 2).points,
      {
        log,
        now: () => 0,
        lease: unfenced,
      },
    );
    const page = await i.scroll({ fileId: 'same', chunksOnly: true }, { limit: 100 });
    expect(page.points.map((p) => p.meta.ingest_version)).toEqual(['v2', 'v2']);
    expect(await i.count({ reserved: 'writing' })).toBe(0);
    expect(await i.count({ fileId: 'other', chunksOnly: true })).toBe(2);
  });

  it('a deleted file is gone though its version was still journaled', async () => {
    const dir = await tempDir();
    const i = await index(dir, { clock: new ManualClock() });
    await writeVersion(i, fileVersion('gone', 'v1', 3));
    await writeVersion(i, fileVersion('kept', 'v1', 3));
    await i.deleteWhere({ fileId: 'gone' });
    expect(await i.count({ fileId: 'gone' })).toBe(0);
    expect(await i.count({ fileId: 'kept', chunksOnly: true })).toBe(3);
  });

  it('closing commits what is journaled', async () => {
    const dir = await tempDir();
    const i = await index(dir, { clock: new ManualClock() });
    const before = await fromOutside(dir);
    await writeVersion(i, fileVersion('closing', 'v1', 5));
    await i.close();
    open.splice(open.indexOf(i), 1);
    expect((await fromOutside(dir)).rows - before.rows).toBe(6);
  });

  it('kill -9 with versions journaled: the next process to open the table commits them, once', async () => {
    const dir = await tempDir();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('./lance-journal-child.ts', import.meta.url)), dir, '8'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('journaled')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`child exited ${code} before journaling`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // Acknowledged but never committed: the table has none of it.
    expect((await fromOutside(dir)).rows).toBe(0);
    expect(await readdir(join(dir, `${TABLE}.kilde-journal`))).toHaveLength(1);
    const i = await index(dir, { clock: new ManualClock() });
    expect(await i.count({ collectionNames: ['c'] })).toBe(24);
    expect(await i.count({ reserved: 'committed' })).toBe(8);
    expect(await readdir(join(dir, `${TABLE}.kilde-journal`))).toEqual([]);
    // A second process opening the table later finds nothing left to replay.
    const j = await index(dir, { clock: new ManualClock() });
    expect(await j.count({ collectionNames: ['c'] })).toBe(24);
  });
});
