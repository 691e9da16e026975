/*
 * The worker pool's scheduling policy (worker-pool.ts runs it): which queued tasks share a worker's
 * turn, and when queued work pays for starting another worker (docs/performance.md, "The worker
 * pool: queued small tasks merged, a second worker only when warranted").
 */

/** What the policy reads of a queued task. */
export interface Queued {
  /** The work's bytes or characters (`RunOptions.weight`); undefined when the caller does not know. */
  weight: number | undefined;
  /** The libraries the task loads (`RunOptions.affinity`). */
  affinity?: readonly string[] | undefined;
  /** When it was queued (the pool's clock). */
  queuedAt: number;
  /** Its worker died under it in a merged turn: it runs again in a turn of its own. */
  alone?: true;
}

/**
 * Queued light tasks merged into one worker turn when a worker frees up: at most `items` tasks and
 * `weight` bytes/characters in all, each of at most `itemWeight`.
 */
export const MERGE = { items: 64, weight: 512 * 1024, itemWeight: 64 * 1024 };
/** Light work over this size is heavy: worth a worker's start (≈0.25 s of CPU, ≈85 MiB). */
export const HEAVY_WEIGHT = 1024 * 1024;
/** Queued light work starts another worker past this many bytes/characters in all… */
export const BACKLOG_WEIGHT = 4 * 1024 * 1024;
/** …or once its oldest task has waited this long (ms, on the pool's clock). */
export const BACKLOG_MS = 1000;

/** A task of known size, no larger than `HEAVY_WEIGHT`, that loads no extractor library. */
export function light(task: Queued): boolean {
  return task.weight !== undefined && task.weight <= HEAVY_WEIGHT && (task.affinity ?? []).length === 0;
}

/** A task that may share a worker turn with others (`MERGE`). */
export function mergeable(task: Queued): boolean {
  return !task.alone && light(task) && (task.weight ?? 0) <= MERGE.itemWeight;
}

/**
 * Takes off `queue` the mergeable tasks that join `first` in one worker turn, oldest first, up to
 * `MERGE`: concurrent callers share one IPC round trip the way one pipeline pass does.
 */
export function takeMergeable<T extends Queued>(queue: T[], first: T): T[] {
  const taken: T[] = [];
  let weight = first.weight ?? 0;
  for (let i = 0; i < queue.length && taken.length + 1 < MERGE.items; ) {
    const task = queue[i] as T;
    if (mergeable(task) && weight + (task.weight ?? 0) <= MERGE.weight) {
      weight += task.weight ?? 0;
      taken.push(task);
      queue.splice(i, 1);
    } else i++;
  }
  return taken;
}

/**
 * Whether the queued work pays for another worker's start: a heavy task (a real extractor, a large
 * text), or light work over `BACKLOG_WEIGHT` in all or waiting longer than `BACKLOG_MS`. Small text
 * work otherwise waits for the warm worker, whose next turn takes it all at once.
 */
export function warranted(queue: readonly Queued[], now: number): boolean {
  let weight = 0;
  for (const task of queue) {
    if (!light(task)) return true;
    weight += task.weight ?? 0;
  }
  const oldest = queue[0];
  return weight > BACKLOG_WEIGHT || (oldest !== undefined && now - oldest.queuedAt >= BACKLOG_MS);
}

/**
 * A kept idle worker holding this many MiB more than at its start is replaced by a fresh one: what
 * loading the libraries adds (eld, pdf.js, mammoth: tens of MiB) stays; a large document's heap,
 * which V8 keeps once grown, goes.
 */
export const RECYCLE_GROWTH_MB = 256;

/** Whether a worker's memory (its last report) has grown by more than `growthMb` since its start. */
export function grown(memory: { rss: number; startRss: number } | undefined, growthMb: number): boolean {
  return memory !== undefined && memory.rss - memory.startRss > growthMb * 1024 * 1024;
}
