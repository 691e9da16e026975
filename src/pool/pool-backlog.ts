import type { Clock, Timer } from '../clock.js';
import { type Queued, waitedDue, warranted } from './pool-policy.js';

/** What the backlog reads of a worker: whether it is busy (its turn), and its turn's estimated ms. */
interface Busy {
  turn: readonly unknown[];
  turnMs: number;
}

/**
 * When the queued work of a pool (worker-pool.ts) warrants another worker (pool-policy.ts,
 * `warranted`): it remembers when a turn last started, and while work waits it looks again (`onDue`)
 * when that work will have waited long enough.
 */
export class Backlog {
  readonly #clock: Clock;
  readonly #onDue: () => void;
  #lastStart = Number.NEGATIVE_INFINITY;
  #timer: Timer | undefined;

  constructor(clock: Clock, onDue: () => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** A worker was handed a turn now. */
  started(): void {
    this.#lastStart = this.#clock.now();
  }

  /** Why another worker should start now for `queue`, every one of `workers` being busy; undefined: none. */
  why(queue: readonly Queued[], workers: Iterable<Busy>): ReturnType<typeof warranted> {
    return warranted(queue, this.#clock.now(), this.#running(workers));
  }

  /** While work waits and another worker may start (`canStart`), looks again when it will have waited enough. */
  watch(queue: readonly Queued[], workers: Iterable<Busy>, canStart: boolean): void {
    const due = canStart ? waitedDue(queue, this.#running(workers)) : undefined;
    if (due === undefined) {
      this.cancel();
      return;
    }
    this.#timer ??= this.#clock.schedule(
      () => {
        this.#timer = undefined;
        this.#onDue();
      },
      Math.max(0, due - this.#clock.now()),
    );
  }

  cancel(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #running(workers: Iterable<Busy>): { lastStart: number; longestMs: number } {
    let longestMs = 0;
    for (const w of workers) if (w.turn.length > 0) longestMs = Math.max(longestMs, w.turnMs);
    return { lastStart: this.#lastStart, longestMs };
  }
}
