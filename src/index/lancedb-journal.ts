import { randomBytes } from 'node:crypto';
import { writeSync } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock, Timer } from '../clock.js';
import type { LanceRow } from './lancedb-rows.js';

/**
 * The commit window of a LanceDB table's new files (docs/decisions-index.md, "One commit per window for
 * new files"). Every Lance commit is a table version (a manifest, a fragment, and later compaction
 * and index work), so one upload per commit made 1,070 versions per 1,000 uploads sent one at a
 * time. An upsert with `append` (every id new to the table) of one file's rows (the version
 * protocol's new files, src/versions/write.ts) is instead written to this journal, one line per
 * upsert, and acknowledged; the rows of every line journaled within `windowMs` are appended to the
 * table in one commit, after which their journal segment is removed. To the protocol it is storage:
 * an atomic, durable append of a batch.
 *
 * What stays true:
 * - Atomic per file: a version's rows are one journal line and land in one commit, never in part.
 * - Durable when acknowledged: the line is written before the caller is answered, with the same
 *   durability as Lance's own commits (the operating system holds it; neither is fsynced), so a
 *   process killed (kill -9) before the commit leaves the segment behind, and the next process to
 *   open the table appends it (merged by id, so a segment whose commit landed before the kill is
 *   harmless) before anything else is written. A segment is claimed by renaming it, so only one
 *   process replays it; a live process's segments are left alone.
 * - Read-your-writes in this process: every read and every other write of the table flushes the
 *   journal first (`flush`), and a version of a file with rows still journaled is written after
 *   the flush, so its presence check and its retirement see them. Other processes see the rows once
 *   the window's commit lands: at most `windowMs` later than without the window (their reads
 *   re-check the table every `readConsistencySeconds` in any case).
 */

interface Entry {
  fileId: string;
  rows: LanceRow[];
  /** Its line could not be written: the caller was told so, and the rows are not committed. */
  dropped: boolean;
}

interface Segment {
  seq: number;
  path: string;
  /** Opened on the first line. */
  handle: Promise<FileHandle> | undefined;
  entries: Entry[];
  /** Its entries not dropped, per file: `pending` answers in constant time (a pass asks per file). */
  files: Map<string, number>;
  rows: number;
  /** The lines' writes, one after another. */
  writes: Promise<void>;
  /** A line could not be written whole: later lines go to a new segment. */
  broken: boolean;
  /** Its commit failed: the next one merges by id (an append may have landed after all). */
  failed: boolean;
}

/** Appends rows to the table in one commit (the first try an append, a retry a merge by id). */
export type CommitRows = (rows: LanceRow[], retry: boolean) => Promise<void>;

export interface JournalOptions {
  /** The journal's folder (one per table, beside the table's own). */
  dir: string;
  /** How long a journaled version waits for others to share its commit. 0: no journal at all. */
  windowMs: number;
  /** Rows that close a window early (the writer's group-commit size). */
  maxRows: number;
  clock: Clock;
  log: Logger;
  /** Whether a process id is alive on this machine (default `kill(pid, 0)`; tests pass their own). */
  alive?: (pid: number) => boolean;
}

/** Whether process `pid` exists on this machine. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const SEGMENT = /^(\d+)-([0-9a-f]+)-(\d+)\.jsonl$/;
const CLAIMED = /^(\d+)-([0-9a-f]+)-(\d+)\.jsonl\.replay-(\d+)-([0-9a-f]+)$/;

export class CommitJournal {
  readonly #token = randomBytes(6).toString('hex');
  #seq = 0;
  #current: Segment | undefined;
  /** Segments closed for new lines, waiting for a commit (a failed one's are kept for the next). */
  #closed: Segment[] = [];
  /** Segments whose commit is running now. */
  #committing: Segment[] = [];
  #timer: Timer | undefined;
  #flushing: Promise<void> | undefined;
  #commit: CommitRows | undefined;
  #dirMade = false;

  constructor(private readonly o: JournalOptions) {}

  get enabled(): boolean {
    return this.o.windowMs > 0;
  }

  /** Whether rows of this file are journaled and not yet committed. */
  pending(fileId: string): boolean {
    const has = (s: Segment | undefined) => (s?.files.get(fileId) ?? 0) > 0;
    return has(this.#current) || this.#closed.some(has) || this.#committing.some(has);
  }

  /** Whether nothing is journaled and not yet committed (a commit running counts as not yet). */
  get empty(): boolean {
    return (
      (this.#current?.entries.length ?? 0) === 0 && this.#closed.length === 0 && this.#committing.length === 0
    );
  }

  /**
   * Journals one version's rows (all of them, one line) and resolves once the line is written; the
   * window's commit follows. `commit` appends rows to the table (the latest caller's is used).
   */
  async add(fileId: string, rows: LanceRow[], commit: CommitRows): Promise<void> {
    this.#commit = commit;
    const segment = this.#open();
    const entry: Entry = { fileId, rows, dropped: false };
    segment.entries.push(entry);
    segment.files.set(fileId, (segment.files.get(fileId) ?? 0) + 1);
    segment.rows += rows.length;
    const line = `${JSON.stringify(rows)}\n`;
    const write = segment.writes.then(async () => {
      if (segment.broken) throw new Error('the journal segment could not be written');
      segment.handle ??= this.#create(segment.path);
      writeLine((await segment.handle).fd, line);
    });
    segment.writes = write.catch(() => undefined);
    try {
      await write;
    } catch (err) {
      entry.dropped = true;
      segment.files.set(fileId, (segment.files.get(fileId) ?? 1) - 1);
      segment.rows -= rows.length;
      segment.broken = true;
      throw err;
    }
    if (segment.rows >= this.o.maxRows) void this.flush().catch(() => undefined);
    else this.#timer ??= this.o.clock.schedule(() => this.#onTimer(), this.o.windowMs);
  }

  /**
   * Commits everything journaled before this call (waiting for a commit already running) and
   * removes its segments; lines journaled meanwhile wait for their own window. Rejects when the
   * table refuses the rows; they stay journaled for the next flush.
   */
  async flush(): Promise<void> {
    const upTo = this.#seq;
    const waiting = () =>
      ((this.#current?.entries.length ?? 0) > 0 && this.#current!.seq <= upTo) ||
      this.#closed.some((s) => s.seq <= upTo);
    while (this.#flushing || waiting()) {
      if (!this.#flushing) {
        this.#flushing = this.#flushOnce().finally(() => {
          this.#flushing = undefined;
        });
      }
      const running = this.#flushing;
      await running;
      if (!waiting()) return;
    }
  }

  /** Flushes and stops the window's timer (the index is closing). */
  async close(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.flush();
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.flush().catch((err: unknown) => {
      this.o.log.error(
        { err },
        'committing the journaled new files failed; they stay journaled and are retried',
      );
      this.#timer ??= this.o.clock.schedule(() => this.#onTimer(), this.o.windowMs);
    });
  }

  async #flushOnce(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#current) {
      this.#closed.push(this.#current);
      this.#current = undefined;
    }
    const segments = this.#closed.splice(0);
    this.#committing = segments;
    try {
      // Every line handed to a write has settled (written, or its caller told it failed).
      await Promise.all(segments.map((s) => s.writes));
      const rows = segments.flatMap((s) => s.entries.filter((e) => !e.dropped).flatMap((e) => e.rows));
      const retry = segments.some((s) => s.failed);
      if (rows.length > 0) await this.#commit!(rows, retry);
    } catch (err) {
      // Kept, in order, for the next flush: the retry merges by id (an append may have landed).
      for (const s of segments) s.failed = true;
      this.#closed.unshift(...segments);
      this.#committing = [];
      throw err;
    }
    // Removed before the file counts as committed: a later write of it (a retirement) must never be
    // followed by a replay of this segment.
    try {
      await Promise.all(segments.map((s) => this.#remove(s)));
    } catch (err) {
      // Committed but still on disk: merged again (idempotent) by the next flush, which removes them.
      for (const s of segments) s.failed = true;
      this.#closed.unshift(...segments);
      throw err;
    } finally {
      this.#committing = [];
    }
  }

  #open(): Segment {
    if (this.#current && !this.#current.broken) return this.#current;
    if (this.#current) this.#closed.push(this.#current);
    this.#seq += 1;
    const name = `${process.pid}-${this.#token}-${this.#seq}.jsonl`;
    this.#current = {
      seq: this.#seq,
      path: join(this.o.dir, name),
      handle: undefined,
      entries: [],
      files: new Map(),
      rows: 0,
      writes: Promise.resolve(),
      broken: false,
      failed: false,
    };
    return this.#current;
  }

  async #create(path: string): Promise<FileHandle> {
    if (!this.#dirMade) {
      await mkdir(this.o.dir, { recursive: true });
      this.#dirMade = true;
    }
    return open(path, 'a');
  }

  async #remove(s: Segment): Promise<void> {
    if (s.handle) await (await s.handle.catch(() => undefined))?.close().catch(() => undefined);
    await rm(s.path, { force: true });
  }

  /**
   * Appends (merging by id) the segments left by processes that ended before committing them, and
   * removes them; called when a process first opens the table, before it writes. A segment is
   * claimed by renaming it first, so two processes opening the table at once never both replay one.
   * Returns how many rows were replayed.
   */
  async recover(commit: CommitRows): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.o.dir);
    } catch {
      return 0;
    }
    let replayed = 0;
    for (const name of names.sort()) {
      const path = join(this.o.dir, name);
      let claimed: string;
      const seg = SEGMENT.exec(name);
      const prior = CLAIMED.exec(name);
      if (seg) {
        if (!this.#dead(Number(seg[1]), seg[2]!)) continue;
        claimed = `${path}.replay-${process.pid}-${this.#token}`;
      } else if (prior) {
        // A replay that did not finish (its process ended too).
        if (!this.#dead(Number(prior[4]), prior[5]!)) continue;
        claimed = path.replace(/\.replay-\d+-[0-9a-f]+$/, `.replay-${process.pid}-${this.#token}`);
      } else continue;
      try {
        await rename(path, claimed);
      } catch {
        continue; // another process claimed it
      }
      const rows = parseSegment(await readFile(claimed, 'utf8'));
      if (rows.length > 0) await commit(rows, true);
      await rm(claimed, { force: true });
      replayed += rows.length;
      this.o.log.info(
        { segment: name, rows: rows.length },
        'replayed the journaled new files of an ended process',
      );
    }
    return replayed;
  }

  /** A segment's process has ended: it is not alive, or it is this process id from an earlier start. */
  #dead(pid: number, token: string): boolean {
    if (pid === process.pid) return token !== this.#token;
    return !(this.o.alive ?? isAlive)(pid);
  }
}

/**
 * Writes `line` whole at the end of the segment, synchronously: a line is written when the operating
 * system has it, so waiting for libuv's threads bought nothing but their cost (1000 lines of 7 KB:
 * 10–15 ms of CPU against 42–92 ms with `appendFile`, the CLI's 1000-file pass pays it per file).
 */
function writeLine(fd: number, line: string): void {
  const bytes = Buffer.from(line, 'utf8');
  for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
}

/** A segment's rows; a last line cut short by a kill (never acknowledged) is skipped. */
export function parseSegment(text: string): LanceRow[] {
  const rows: LanceRow[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      rows.push(...(JSON.parse(line) as LanceRow[]));
    } catch {
      // The line being written when the process died: its caller was never answered.
    }
  }
  return rows;
}
