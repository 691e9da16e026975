import type { BatchEntry } from './batch.js';

/*
 * The received files of job batches kept in memory instead of spool files (the in-process queue,
 * batch-receive.ts), bounded for the whole process: a client submits its next batch while those
 * before it wait in the queue, so each batch's own bound would not bound the sum.
 */

/** The most bytes of files this process's batches keep in memory until they end; past it files are spooled. */
export const HELD_BYTES = 64 << 20;
let held = 0;

/** Whether `bytes` more may be kept in memory now; if so they are counted until `releaseHeld`. */
export function holdBytes(bytes: number): boolean {
  if (held + bytes > HELD_BYTES) return false;
  held += bytes;
  return true;
}

/** Lets go of the files of `entries` kept in memory (their batch has ended, or was refused). */
export function releaseHeld(entries: readonly BatchEntry[]): void {
  for (const f of entries) {
    if (!f.data) continue;
    held -= f.data.length;
    delete f.data;
  }
}

/** Bytes kept in memory by batches now. */
export const heldBytes = (): number => held;
