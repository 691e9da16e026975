import { cancelled } from './stages.js';

/**
 * At most `size` tasks at a time, the others waiting their turn in arrival order; a waiting caller
 * whose signal aborts leaves the line with the ingest's cancellation error (499). The service runs
 * its large files through one (`INGEST_LARGE_FILES`), so their memory is bounded however many
 * uploads and jobs arrive at once.
 */
export class Slots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(size: number) {
    this.#free = Math.max(1, size);
  }

  async run<T>(signal: AbortSignal | undefined, task: () => Promise<T>): Promise<T> {
    await this.#acquire(signal);
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #acquire(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(cancelled());
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.#waiting.indexOf(take);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(cancelled());
      };
      const take = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#waiting.push(take);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free += 1;
  }
}
