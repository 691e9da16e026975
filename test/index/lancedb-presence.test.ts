import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type Table } from '@lancedb/lancedb';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PresenceProbe } from '../../src/index/lancedb-presence.js';
import { lanceSchema, pointToRow } from '../../src/index/lancedb-rows.js';
import { openOrCreateTable } from '../../src/index/lancedb-schema-check.js';
import { RESERVED_TENANTS } from '../../src/index/reserved.js';

/**
 * `PresenceProbe` answers "does this file have rows (and its `committed` entry) in this
 * collection?" for every `writeVersion`. Questions asked while a read is in flight wait for it and
 * share the next read, so concurrent uploads (which rarely ask in the same turn of the event loop)
 * do not each pay a scan of the table.
 */
let dir: string;
let table: Table;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-presence-'));
  const db = await connect(dir);
  table = await openOrCreateTable(db, 'files', undefined, dir, pino({ level: 'silent' }));
  const row = (id: string, fileId: string, collection: string) =>
    pointToRow(
      {
        id,
        content: `text of ${fileId}`,
        meta: {
          collection_name: collection,
          collection_type: 'knowledge',
          file_id: fileId,
          ingest_version: 'v1',
          split_id: 0,
        },
      },
      undefined,
    );
  const rows = [
    row('a-1', 'a', 'docs'),
    row('b-1', 'b', 'docs'),
    row('committed-c', 'c', RESERVED_TENANTS.committed),
    row('c-1', 'c', 'other'),
  ];
  const { makeArrowTable } = await import('@lancedb/lancedb');
  await table.add(
    makeArrowTable(rows as unknown as Record<string, unknown>[], { schema: lanceSchema(undefined) }),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * The table, with every read it serves counted (what the probe costs the engine), each read held
 * until `release()`: a read is surely still running while later questions arrive.
 */
function heldReads(inner: Table): { table: Table; reads: () => number; release: () => void } {
  let reads = 0;
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const table = new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'query') {
        return () => {
          reads += 1;
          const query = target.query();
          const toArray = query.toArray.bind(query);
          query.toArray = async (...args: Parameters<typeof toArray>) => {
            await gate;
            return toArray(...args);
          };
          return query;
        };
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { table, reads: () => reads, release };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('PresenceProbe', () => {
  it('answers each file in its collection: chunks, and the committed entry by its id', async () => {
    const probe = new PresenceProbe({ timeoutMs: 10_000 });
    const [a, b, c, cOther, d] = await Promise.all([
      probe.has(table, 'a', 'docs', 'committed-a'),
      probe.has(table, 'b', 'elsewhere', 'committed-b'),
      probe.has(table, 'c', 'docs', 'committed-c'),
      probe.has(table, 'c', 'other', 'committed-c-other'),
      probe.has(table, 'd', 'docs', 'committed-d'),
    ]);
    expect(a).toEqual({ chunks: true, committed: false });
    expect(b).toEqual({ chunks: false, committed: false });
    expect(c).toEqual({ chunks: false, committed: true });
    expect(cOther).toEqual({ chunks: true, committed: false });
    expect(d).toEqual({ chunks: false, committed: false });
  });

  it('questions asked while a read runs share the next read, and every one is answered', async () => {
    const { table: held, reads, release } = heldReads(table);
    const probe = new PresenceProbe({ timeoutMs: 10_000 });
    // The first question starts a read, held open; the others arrive turn after turn meanwhile.
    const answers: Array<Promise<unknown>> = [probe.has(held, 'a', 'docs', 'committed-a')];
    await turn();
    await turn();
    expect(reads()).toBe(1);
    for (const fileId of ['b', 'c', 'd', 'e', 'f']) {
      answers.push(probe.has(held, fileId, 'docs', `committed-${fileId}`));
      await turn();
    }
    expect(reads()).toBe(1);
    release();
    const got = await Promise.all(answers);
    expect(got).toEqual([
      { chunks: true, committed: false },
      { chunks: true, committed: false },
      { chunks: false, committed: true },
      { chunks: false, committed: false },
      { chunks: false, committed: false },
      { chunks: false, committed: false },
    ]);
    // One read for the first question, one for the five asked while it ran.
    expect(reads()).toBe(2);
    // The probe is free again: a later question gets its own read.
    await expect(probe.has(held, 'a', 'docs', 'committed-a')).resolves.toEqual({
      chunks: true,
      committed: false,
    });
  });

  it('a failed read fails the questions it carried, and the next questions get a read of their own', async () => {
    let fail = true;
    const flaky = new Proxy(table, {
      get(target, key, receiver) {
        if (key === 'query' && fail) {
          fail = false;
          return () => {
            throw new Error('the table is unreadable');
          };
        }
        const value = Reflect.get(target, key, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const probe = new PresenceProbe({ timeoutMs: 10_000 });
    await expect(probe.has(flaky, 'a', 'docs', 'committed-a')).rejects.toThrow('the table is unreadable');
    await expect(probe.has(flaky, 'b', 'docs', 'committed-b')).resolves.toEqual({
      chunks: true,
      committed: false,
    });
  });
});
