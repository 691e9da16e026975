/*
 * The worker pool's scheduling policy (worker-pool.ts runs it): which queued tasks share a worker's
 * turn, when queued work pays for starting another worker, and which worker takes which task
 * (docs/performance.md, "The worker pool: queued small tasks merged, a second worker on a backlog").
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
/** Light work over this size is heavy: it never shares a turn. */
export const HEAVY_WEIGHT = 1024 * 1024;

/**
 * A warm worker's CPU per MiB of a task's weight, ms, by the library it loads (its `affinity`; ''
 * for none: plain text, chunking, BM25), measured on this project's 2-core machine (docs/performance.md,
 * "The worker pool"): text 280 to read and 160 to chunk and analyse, PDFium 130–360, mammoth 1,300
 * (30–160 ms a file however small). A guess of how long queued work keeps a worker busy, not a limit.
 */
export const MS_PER_MIB: Readonly<Record<string, number>> = {
  '': 300,
  pdf: 400,
  docx: 1300,
  html: 600,
  office: 1500,
};
/** A library missing from `MS_PER_MIB`. */
const OTHER_MS_PER_MIB = 1500;

/**
 * Queued work estimated at more than this (ms of one worker's time, `estimateMs`) starts another
 * worker: the last of it would wait longer than a worker's start and its libraries' load (≈ 0.3 s
 * on 2 cores) by enough to pay for them. Below it the busy worker takes it all in turn: on 2 cores
 * the pipeline's own process needs the other core, and a second worker loads mammoth or PDFium
 * again for work the first would finish about as soon.
 */
export const BACKLOG_WORK_MS = 2000;
/**
 * Queued work also starts another worker once it has waited this long (ms, on the pool's clock) with
 * no task started meanwhile, behind a turn estimated at least as long (a large PDF holds the worker)…
 */
export const BACKLOG_MS = 1000;
/**
 * …or this long behind turns estimated shorter: they ran long because the cores are busy (a second
 * worker would find none free) or the estimate was wrong.
 */
export const STALL_MS = 4000;

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

/** How long `task` would keep a warm worker busy, ms (`MS_PER_MIB`); unknown size: Infinity. */
export function estimateMs(task: Queued): number {
  if (task.weight === undefined) return Number.POSITIVE_INFINITY;
  const libs = task.affinity ?? [];
  const rate = libs.length === 0 ? (MS_PER_MIB[''] as number) : Math.max(...libs.map(rateOf));
  return (task.weight / (1024 * 1024)) * rate;
}

const rateOf = (lib: string): number => MS_PER_MIB[lib] ?? OTHER_MS_PER_MIB;

/**
 * Why the queued work pays for another worker's start, or undefined when it waits for a busy one: a
 * task of unknown size (a PDF read in parts asks for two workers so), queued work estimated at
 * more than `BACKLOG_WORK_MS`, or work that has waited since the last task started (`lastStart`, the
 * pool's clock) `BACKLOG_MS` behind a long turn or `STALL_MS` behind short ones (`waitedDue`). A
 * DOCX or a PDF is no reason by itself: the busy worker takes it next and loads its library once,
 * and a queue that moves is no backlog.
 */
export function warranted(
  queue: readonly Queued[],
  now: number,
  running: Running,
): 'unknown size' | 'backlog' | 'waited' | undefined {
  let ms = 0;
  for (const task of queue) {
    ms += estimateMs(task);
    if (ms === Number.POSITIVE_INFINITY) return 'unknown size';
  }
  if (ms > BACKLOG_WORK_MS) return 'backlog';
  const due = waitedDue(queue, running);
  return due !== undefined && now >= due ? 'waited' : undefined;
}

/** What `warranted` reads of the busy workers: when the last turn started, and the longest turn's estimate (ms). */
export interface Running {
  lastStart: number;
  longestMs: number;
}

/** When the queued work will have waited long enough for another worker (`warranted`); undefined: none queued. */
export function waitedDue(queue: readonly Queued[], running: Running): number | undefined {
  const oldest = queue[0];
  if (oldest === undefined) return undefined;
  const wait = running.longestMs >= BACKLOG_MS ? BACKLOG_MS : STALL_MS;
  return Math.max(oldest.queuedAt, running.lastStart) + wait;
}

/** What the policy reads of a worker: the libraries it has loaded (the `affinity` names). */
export interface Loaded {
  warm: ReadonlySet<string>;
}

/**
 * Whether `worker` suits `task`: it has loaded each library the task needs, or no other live worker
 * has (so each library is loaded and warmed up in one worker rather than in every one).
 */
export function suits(task: Queued, worker: Loaded, workers: Iterable<Loaded>): boolean {
  const others = [...workers].filter((w) => w !== worker);
  return (task.affinity ?? []).every((lib) => worker.warm.has(lib) || !others.some((w) => w.warm.has(lib)));
}

/**
 * Of the `idle` workers, the one that takes the next task: one that suits the oldest queued task (a
 * DOCX to the worker that has loaded mammoth, a PDF to the one with PDFium), else the first.
 */
export function idleFor<W extends Loaded>(
  head: Queued | undefined,
  idle: readonly W[],
  workers: Iterable<Loaded>,
): W | undefined {
  if (head === undefined || idle.length < 2) return idle[0];
  return idle.find((w) => suits(head, w, workers)) ?? idle[0];
}

/** A queued task passed over this many times by later ones is started next, whatever it needs. */
const MAX_PASSED = 8;

/**
 * Takes off `queue` the task `worker` starts: the oldest one it suits (`suits`), else the oldest. A
 * worker never waits for a task that suits it better, and a task passed over `MAX_PASSED` times
 * goes next.
 */
export function pickFor<T extends Queued & { passed: number }>(
  queue: T[],
  worker: Loaded,
  workers: Iterable<Loaded>,
): T {
  const head = queue[0] as T;
  if (head.passed < MAX_PASSED) {
    const at = queue.findIndex((task) => suits(task, worker, workers));
    if (at > 0) {
      for (let i = 0; i < at; i++) (queue[i] as T).passed++;
      return queue.splice(at, 1)[0] as T;
    }
  }
  return queue.shift() as T;
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
