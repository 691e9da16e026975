/**
 * What a holder of the per-`file_id` lock has in hand while it runs (the ingestion service's locks
 * implement it: src/ingest/lock.ts, src/ingest/redis-lock.ts).
 *
 * The in-process lock cannot be lost and needs no fence. The Redis lease can expire under a holder
 * that stalls (a long GC pause, a partition): then another replica takes the lease while the first
 * one still runs. `fence` (a number that grows with every lease taken on the `file_id`) and `claim`
 * keep such a stale holder from retiring a newer version (retire.ts, `retireFenced`).
 */
export interface Lease {
  /** Grows with every lease taken on this `file_id`, across replicas; absent for the in-process lock. */
  readonly fence?: number;
  /** Throws `LOCK_FAILED` when the lease is no longer this holder's (checked before writing). */
  assertHeld(): Promise<void>;
  /**
   * Records this holder's fence as the newest finished write of `scope` (a collection name, or the
   * lock's scope of a delete of the whole file) unless a newer one is there, and answers the newest
   * fence that any finished write of the scope or delete of the file has claimed.
   */
  claim(scope: string): Promise<number>;
}
