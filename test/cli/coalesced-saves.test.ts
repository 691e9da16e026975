import { describe, expect, it } from 'vitest';
import { coalesced } from '../../src/cli/job-ingest.js';

/**
 * `kilde ingest --url` saves its manifest after every submitted and every finished job; the saves
 * asked for while one is being written share the next write, and each save resolves only after a
 * write that started after it was asked for (so the manifest on disk holds its change).
 */
describe('coalesced manifest saves', () => {
  it('shares one write among the saves asked for while another runs, each seeing its own change', async () => {
    const state = { value: 0 };
    const written: number[] = [];
    let release: (() => void) | undefined;
    const save = coalesced(async () => {
      const seen = state.value;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      written.push(seen);
    });
    state.value = 1;
    const first = save();
    await Promise.resolve();
    // While the first write runs, three more changes and saves arrive.
    const later: Array<Promise<void>> = [];
    for (const v of [2, 3, 4]) {
      state.value = v;
      later.push(save());
    }
    release?.();
    await first;
    expect(written).toEqual([1]);
    await new Promise((r) => setImmediate(r));
    release?.();
    await Promise.all(later);
    // One more write, and it saw the last change: four saves, two writes.
    expect(written).toEqual([1, 4]);
    await save.settled();
  });

  it('fails the saves that shared a failed write, and the next save writes again', async () => {
    let fail = true;
    let writes = 0;
    const save = coalesced(async () => {
      writes += 1;
      if (fail) {
        fail = false;
        throw new Error('disk full');
      }
    });
    await expect(save()).rejects.toThrow('disk full');
    await expect(save()).resolves.toBeUndefined();
    expect(writes).toBe(2);
    await expect(save.settled()).resolves.toBeUndefined();
  });

  it('with a gap, the saves asked for before the next write may start all share it', async () => {
    let writes = 0;
    const waits: number[] = [];
    let release = () => {};
    const save = coalesced(
      async () => {
        writes += 1;
      },
      {
        gapMs: 60_000,
        wait: (ms) => {
          waits.push(ms);
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
      },
    );
    // The first write starts at once: there was none before it.
    await save();
    expect(writes).toBe(1);
    expect(waits).toEqual([]);
    // The next waits out the gap; every save asked for meanwhile joins it.
    const later = [save(), save(), save()];
    await new Promise((r) => setImmediate(r));
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(0);
    expect(writes).toBe(1);
    release();
    await Promise.all(later);
    expect(writes).toBe(2);
  });
});
