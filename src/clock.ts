import { setTimeout as sleepTimer } from 'node:timers/promises';

/** A scheduled callback that can be cancelled. */
export interface Timer {
  cancel(): void;
}

/**
 * Time as Kilde's code sees it. Production uses {@link systemClock}; tests pass a manual clock so that
 * nothing waits on, or asserts, the wall clock.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `ms` (never keeps the process alive on its own). */
  schedule(fn: () => void, ms: number): Timer;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Node's timers hold at most 2^31-1 ms; a longer delay silently becomes 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(fn, ms) {
    const t = setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  async sleep(ms, signal) {
    try {
      await sleepTimer(Math.min(Math.max(0, ms), MAX_TIMER_MS), undefined, signal ? { signal } : undefined);
    } catch (err) {
      throw signal?.aborted ? signal.reason : err;
    }
  },
};
