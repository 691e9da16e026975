import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openIndex } from '../../src/index/open.js';
import type { VectorIndex } from '../../src/index/store.js';
import { createCollectionState } from '../../src/retrieve/collection-state.js';

let dir: string;
let index: VectorIndex;
let describes = 0;

/** The real LanceDB index, counting how often the state asks it to describe itself. */
function counted(i: VectorIndex): VectorIndex {
  return new Proxy(i, {
    get(target, prop, receiver) {
      if (prop === 'describe') {
        return () => {
          describes++;
          return target.describe();
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-state-'));
  index = await openIndex(
    { uri: dir, collection: 'docs', sparse: true, timeoutMs: 5000 },
    { log: pino({ level: 'silent' }) },
  );
});
afterAll(async () => {
  await index.close();
  await rm(dir, { recursive: true, force: true });
});

describe('collection state', () => {
  it('re-describes a missing collection on every call, then trusts a complete one for refreshMs', async () => {
    let t = 0;
    const state = createCollectionState({
      index: counted(index),
      refreshMs: 10_000,
      partialRefreshMs: 1000,
      now: () => t,
    });
    expect(await state.current()).toMatchObject({ exists: false });
    expect(await state.current()).toMatchObject({ exists: false });
    expect(describes).toBe(2);

    // Another writer (here: the same directory) creates the table and its full-text index.
    await index.ensureCollection();
    const [a, b] = await Promise.all([state.current(), state.current()]);
    expect(a).toMatchObject({ exists: true, hasSparse: true });
    expect(b).toBe(a);
    expect(describes).toBe(3);

    t += 9_999;
    await state.current();
    expect(describes).toBe(3);
    t += 1;
    await state.current();
    expect(describes).toBe(4);
  });

  it('reads the collection again soon after a write from this process, never per search otherwise', async () => {
    let t = 0;
    const state = createCollectionState({
      index: counted(index),
      refreshMs: 10_000,
      partialRefreshMs: 1000,
      writeRefreshMs: 500,
      now: () => t,
    });
    await index.ensureCollection();
    const before = describes;
    await state.current();
    for (let n = 0; n < 5; n++) await state.current();
    expect(describes).toBe(before + 1);
    // A write through another handle on the same table in this process (as `serve all` ingests).
    const writer = await openIndex(
      { uri: dir, collection: 'docs', sparse: true, timeoutMs: 5000 },
      { log: pino({ level: 'silent' }) },
    );
    await writer.upsert([
      {
        id: '00000000-0000-4000-8000-000000000001',
        content: 'x',
        meta: {
          collection_name: 'c',
          collection_type: 'knowledge',
          file_id: 'f',
          ingest_version: 'v',
          split_id: 0,
        },
      },
    ]);
    await writer.close();
    t += 499;
    await state.current();
    expect(describes).toBe(before + 1);
    t += 1;
    await state.current();
    await state.current();
    expect(describes).toBe(before + 2);
  });
});
