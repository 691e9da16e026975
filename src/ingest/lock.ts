/**
 * An in-process async mutex keyed by `file_id`: concurrent ingests (and deletes) of one file run one
 * after another, in arrival order, so their versions never interleave (see versioning.ts).
 *
 * Scope: ONE process. Several replicas of `kilde serve ingest` behind a load balancer do not share
 * this lock; two replicas ingesting the same `file_id` at once could each delete the other's fresh
 * points in their clean-up step. Multi-replica deployments therefore need either sticky routing of a
 * `file_id` to one replica (e.g. hash-based routing on the request) or a distributed lock with a
 * lease keyed by `file_id` (Redis `SET NX PX`, etcd lease, or a Postgres advisory lock) held for
 * the whole ingest. Both would slot in behind this same `run(key, fn)` shape.
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
