import type { Lease } from '../versions/lease.js';

/** The lease a lock holder has in hand (fence and claim): defined with the version protocol. */
export type { Lease };

/** The `claim` scope of a delete of every version of a file in every collection. */
export const DELETED_SCOPE = '\u0000deleted';

/** The per-`file_id` lock the ingestion service holds around every ingest and delete. */
export interface FileLock {
  run<T>(key: string, fn: (lease: Lease) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * An in-process async mutex keyed by `file_id`: concurrent ingests (and deletes) of one file run one
 * after another, in arrival order, so their versions never interleave (see src/versions/publish.ts).
 *
 * Scope: ONE process. Several replicas of `kilde serve ingest` share the Redis lease instead
 * (`REDIS_URL`, redis-lock.ts), which queues a replica's own requests here first.
 */
export class KeyedMutex {
  /** Tail of each key's queue; a key is removed once its last holder finishes (no leak per file_id). */
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `fn` once every earlier holder of `key` has finished (whether it succeeded or not). */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with a holder or waiters (for tests and diagnostics). */
  get size(): number {
    return this.#tails.size;
  }
}

const unfenced: Lease = {
  assertHeld: () => Promise.resolve(),
  claim: () => Promise.resolve(0),
};

/** Today's lock for one process (no `REDIS_URL`): a {@link KeyedMutex}; its leases are never lost. */
export class InProcessFileLock implements FileLock {
  readonly mutex = new KeyedMutex();

  run<T>(key: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
    return this.mutex.run(key, () => fn(unfenced));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
