import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, systemClock } from '../src/clock.js';
import { ManualClock } from './helpers/clock.js';

describe('systemClock', () => {
  it('clamps a delay beyond what a Node timer holds instead of letting it fire at once', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    let fired = false;
    const timer = systemClock.schedule(() => {
      fired = true;
    }, 1e12);
    // Node turns an overflowing delay into 1 ms and warns on the next tick: give both a chance.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    timer.cancel();
    process.off('warning', onWarning);
    expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([]);
    expect(fired).toBe(false);
    expect(MAX_TIMER_MS).toBe(2 ** 31 - 1);
  });

  it('sleep rejects with the abort reason', async () => {
    const ac = new AbortController();
    const slept = systemClock.sleep(MAX_TIMER_MS, ac.signal);
    ac.abort(new Error('stop'));
    await expect(slept).rejects.toThrow('stop');
  });
});

describe('ManualClock', () => {
  it('fires due timers in order as time advances, and sleeps resolve', async () => {
    const clock = new ManualClock({ start: 0 });
    const seen: string[] = [];
    clock.schedule(() => seen.push('b'), 20);
    clock.schedule(() => seen.push('a'), 10);
    const slept = clock.sleep(15).then(() => seen.push('sleep'));
    clock.advance(12);
    expect(seen).toEqual(['a']);
    clock.advance(10);
    await slept;
    expect(seen).toEqual(['a', 'b', 'sleep']);
    expect(clock.now()).toBe(22);
  });
});
