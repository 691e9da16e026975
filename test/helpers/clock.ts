import type { Clock, Timer } from '../../src/clock.js';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told: `advance(ms)` runs every timer that falls due, in order.
 * `tick` moves time forward on every `now()` read, so code that measures a duration sees one.
 */
export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Set<Pending>();
  private readonly tick: number;
  private readonly autoSleep: boolean;
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];
  /** Every `sleep` asked for, in order (ms). */
  readonly slept: number[] = [];

  /**
   * `tick`: ms added on every `now()` read. `autoSleep`: a `sleep(ms)` moves time forward by `ms` at
   * once (running what falls due) instead of waiting for `advance`: back-off loops run straight through
   * while their waits are recorded in `slept`.
   */
  constructor(options: { start?: number; tick?: number; autoSleep?: boolean } = {}) {
    this.t = options.start ?? Date.UTC(2026, 0, 1);
    this.tick = options.tick ?? 0;
    this.autoSleep = options.autoSleep ?? false;
  }

  now(): number {
    this.t += this.tick;
    return this.t;
  }

  schedule(fn: () => void, ms: number): Timer {
    const entry: Pending = { at: this.t + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.add(entry);
    for (const w of this.waiters.filter((x) => this.timers.size >= x.count)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    return { cancel: () => this.timers.delete(entry) };
  }

  /** Resolves once at least `count` timers (time-outs, sleeps) are waiting. */
  whenPending(count = 1): Promise<void> {
    if (this.timers.size >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.slept.push(ms);
    if (this.autoSleep) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      this.advance(ms);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = this.schedule(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        timer.cancel();
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Timers waiting to fire. */
  get pending(): number {
    return this.timers.size;
  }

  /** Milliseconds until the next timer is due, or undefined when none waits. */
  nextDelay(): number | undefined {
    const next = [...this.timers].sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
    return next === undefined ? undefined : next.at - this.t;
  }

  /** Moves time forward by `ms`, running each timer that falls due (timers they add included). */
  advance(ms: number): void {
    const until = this.t + ms;
    for (;;) {
      const due = [...this.timers]
        .filter((p) => p.at <= until)
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers.delete(due);
      this.t = Math.max(this.t, due.at);
      due.fn();
    }
    this.t = until;
  }
}
