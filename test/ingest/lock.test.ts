import { describe, expect, it } from 'vitest';
import { KeyedMutex } from '../../src/ingest/lock.js';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('KeyedMutex', () => {
  it('runs holders of one key one at a time, in arrival order', async () => {
    const lock = new KeyedMutex();
    const events: string[] = [];
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        lock.run('file-a', async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          events.push(`start ${i}`);
          await tick();
          events.push(`end ${i}`);
          inside--;
        }),
      ),
    );
    expect(maxInside).toBe(1);
    expect(events).toEqual(Array.from({ length: 10 }, (_, i) => [`start ${i}`, `end ${i}`]).flat());
  });

  it('lets different keys run concurrently', async () => {
    const lock = new KeyedMutex();
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      ['a', 'b', 'c'].map((k) =>
        lock.run(k, async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await tick();
          inside--;
        }),
      ),
    );
    expect(maxInside).toBe(3);
  });

  it('releases the key when a holder throws, and forgets idle keys', async () => {
    const lock = new KeyedMutex();
    await expect(
      lock.run('k', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(lock.run('k', async () => 42)).resolves.toBe(42);
    expect(lock.size).toBe(0);
  });
});
