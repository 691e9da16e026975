import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/ingest/slots.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { startIngest } from './helpers/harness.js';

/**
 * Large files (over a pass's 1 MiB) are ingested `INGEST_LARGE_FILES` at a time, whatever arrives at
 * once, so the memory they take stays bounded; a caller that leaves while waiting gets 499.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Slots', () => {
  it('runs at most `size` tasks at once, the others in arrival order', async () => {
    const slots = new Slots(2);
    const events: string[] = [];
    const gates = new Map<string, () => void>();
    const task = (name: string) =>
      slots.run(undefined, async () => {
        events.push(`start ${name}`);
        await new Promise<void>((resolve) => gates.set(name, resolve));
        events.push(`end ${name}`);
        return name;
      });
    const all = ['a', 'b', 'c', 'd'].map(task);
    await turn();
    expect(events).toEqual(['start a', 'start b']);
    gates.get('b')!();
    await turn();
    await turn();
    expect(events).toEqual(['start a', 'start b', 'end b', 'start c']);
    gates.get('a')!();
    gates.get('c')!();
    await turn();
    await turn();
    gates.get('d')!();
    expect(await Promise.all(all)).toEqual(['a', 'b', 'c', 'd']);
    expect(events.filter((e) => e.startsWith('start'))).toEqual(['start a', 'start b', 'start c', 'start d']);
  });

  it('a waiting caller whose signal aborts leaves the line with 499; the next one gets the slot', async () => {
    const slots = new Slots(1);
    let release = () => {};
    const first = slots.run(undefined, () => new Promise<void>((resolve) => (release = resolve)));
    const controller = new AbortController();
    const leaving = slots.run(controller.signal, async () => 'should not run');
    const next = slots.run(undefined, async () => 'next');
    controller.abort();
    await expect(leaving).rejects.toMatchObject({ statusCode: 499 });
    release();
    await first;
    await expect(next).resolves.toBe('next');
  });
});

describe('large files', () => {
  const newDir = tempDirs('kilde-large-');

  it('with INGEST_LARGE_FILES=1 are ingested one after another, each complete', async () => {
    const h = await startIngest({ INGEST_LARGE_FILES: '1', INGEST_SWEEP_INTERVAL: '0' });
    const dir = await newDir();
    try {
      const service = h.part.pipeline().service;
      const events: string[] = [];
      // Just over 1 MiB of prose each.
      const big = (tag: string) =>
        Array.from({ length: 23_000 }, (_, i) => `The ${tag} survey counted ${i} herons in the marsh.`).join(
          ' ',
        );
      const ingest = async (fileId: string) => {
        const path = join(dir, `${fileId}.txt`);
        const text = big(fileId);
        await writeFile(path, text);
        expect(Buffer.byteLength(text)).toBeGreaterThan(1 << 20);
        const out = await service.ingest(
          {
            fileId,
            filename: `${fileId}.txt`,
            collectionName: 'large',
            collectionType: 'file',
            userId: 'u1',
            overwrite: true,
            source: `${fileId}.txt`,
          },
          async () => ({ path, filename: `${fileId}.txt`, bytes: Buffer.byteLength(text) }),
          undefined,
          { onProgress: (p) => events.push(`${fileId} ${p.stage}`) },
        );
        return out;
      };
      const [a, b] = await Promise.all([ingest('a'), ingest('b')]);
      expect(a.chunksCount).toBeGreaterThan(0);
      expect(b.chunksCount).toBe(a.chunksCount);
      // Every stage of one file before any of the other's: the second waited for the first to end.
      const files = events.map((e) => e.split(' ')[0]);
      const first = files[0]!;
      const switches = files.filter((f, i) => i > 0 && f !== files[i - 1]).length;
      expect(switches).toBe(1);
      expect(files.filter((f) => f === first).length).toBeGreaterThan(1);
      expect(events.at(-1)).toMatch(/ write$/);
    } finally {
      await h.close();
    }
  });
});
