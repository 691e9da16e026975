import type { BigIntStats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ExtractedDocument, Extractor, SourceFile } from './extractor.js';
import { readerLibrary } from './file-type.js';

/*
 * A head start for the local `kilde ingest`: its first passes' files are read (`extractMany`, in the
 * pipeline's own worker pool) while the process is still opening the index and building the rest of
 * the pipeline; the pass takes each file's result when it reaches its convert stage. A result is
 * taken only when the file is the one that was read (same inode, size, modification and change
 * times); anything else is read again, as usual.
 */

type Read = PromiseSettledResult<ExtractedDocument[]>;

interface Entry {
  filename: string;
  /** The file as it was before it was read. */
  seen: BigIntStats;
  read: Promise<Read>;
}

/** The files a head start reads: what a pass's convert stage would read, and nothing too large. */
export interface HeadStartLimits {
  /** `MAX_UPLOAD_BYTES`: a larger file fails the pass before a byte of it is read. */
  maxBytes: number;
  /** `INGEST_SEGMENT_CHARS`: plain text larger than this is streamed by the pass, not read whole. */
  streamBytes: number;
}

/** The extractor a pass reads with, and the head start that reads ahead of it. */
export interface HeadStart {
  /**
   * Starts reading `files` (one pass's) now, in one `extractMany` as the pass would: each result
   * waits for the pass that reads its file, or for `drop`. Resolves once the files are stated and
   * their reads handed on (an event-loop turn later: the pool has sent them), so that a caller
   * about to hold the thread (an import) does not hold them up.
   */
  read(files: readonly SourceFile[], limits: HeadStartLimits): Promise<void>;
  /** Forgets `paths`' results (their pass is over): nothing is held past its pass. */
  drop(paths: Iterable<string>): Promise<void>;
  /** Results held now (tests). */
  readonly held: number;
  /** Resolves once every result held now is read (tests). */
  settled(): Promise<void>;
}

/** Whether `a` and `b` describe the same unchanged file. */
function same(a: BigIntStats, b: BigIntStats): boolean {
  return (
    a.ino === b.ino &&
    a.dev === b.dev &&
    a.size === b.size &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs
  );
}

const statOf = (path: string): Promise<BigIntStats | undefined> =>
  stat(path, { bigint: true }).then(
    (s) => (s.isFile() ? s : undefined),
    () => undefined,
  );

/** `read`, or the abort's reason as the file's failure once `signal` aborts first. */
function untilAborted(read: Promise<Read>, signal: AbortSignal | undefined): Promise<Read> {
  if (!signal) return read;
  if (signal.aborted) return Promise.resolve({ status: 'rejected', reason: signal.reason });
  return new Promise<Read>((resolve) => {
    const onAbort = () => resolve({ status: 'rejected', reason: signal.reason });
    signal.addEventListener('abort', onAbort, { once: true });
    void read.then((r) => {
      signal.removeEventListener('abort', onAbort);
      resolve(r);
    });
  });
}

/**
 * `extractor` with a head start: its `extractMany` takes the results read ahead for the files it is
 * given (each checked unchanged since it was read) and reads the others as usual. An extractor that
 * cannot read many files at once (a remote engine) gets no head start (`read` does nothing).
 */
export function withHeadStart(extractor: Extractor): { extractor: Extractor; headStart: HeadStart } {
  const held = new Map<string, Entry>();
  /** Head starts whose files are still being stated: a pass or a drop arriving meanwhile waits. */
  const pending = new Set<Promise<unknown>>();
  const settled = async () => {
    if (pending.size > 0) await Promise.allSettled(pending);
  };
  const extractMany = extractor.extractMany?.bind(extractor);
  const headStart: HeadStart = {
    async read(files, limits) {
      if (!extractMany) return;
      const started = (async () => {
        const seen = await Promise.all(files.map((f) => (f.data ? undefined : statOf(f.path))));
        const chosen = files.flatMap((f, i) => {
          const s = seen[i];
          if (!s || s.size > BigInt(limits.maxBytes) || held.has(f.path)) return [];
          // Plain text over a segment is streamed by the pass (pipeline-extract.ts, `openStreamed`).
          if (s.size > BigInt(limits.streamBytes) && readerLibrary(f.filename) === '') return [];
          return [{ file: { path: f.path, filename: f.filename, bytes: Number(s.size) }, seen: s }];
        });
        if (chosen.length === 0) return;
        const all = extractMany(chosen.map((c) => c.file)).catch((reason: unknown) =>
          chosen.map((): Read => ({ status: 'rejected', reason })),
        );
        chosen.forEach((c, k) => {
          const read = all.then((r) => r[k]!);
          held.set(c.file.path, { filename: c.file.filename, seen: c.seen, read });
        });
      })().catch(() => undefined);
      pending.add(started);
      void started.finally(() => pending.delete(started));
      await started;
      await new Promise<void>((resolve) => setImmediate(resolve));
    },
    async drop(paths) {
      await settled();
      for (const p of paths) held.delete(p);
    },
    get held() {
      return held.size;
    },
    async settled() {
      await settled();
      await Promise.all([...held.values()].map((e) => e.read));
    },
  };
  if (!extractMany) return { extractor, headStart };

  /** What was read ahead for `file` when it is the same file, unchanged; the entry goes either way. */
  const take = async (file: SourceFile): Promise<{ read: Promise<Read> } | undefined> => {
    // Read ahead by path and name alone: a file given with its bytes or its type is read as given.
    if (file.data || file.mimeType) return undefined;
    const entry = held.get(file.path);
    if (!entry || entry.filename !== file.filename) return undefined;
    held.delete(file.path);
    const now = await statOf(file.path);
    return now && same(entry.seen, now) ? { read: entry.read } : undefined;
  };
  const wrapped: Extractor = Object.create(extractor, {
    extractMany: {
      async value(files: readonly SourceFile[], options?: { signal?: AbortSignal }) {
        await settled();
        if (held.size === 0) return extractMany(files, options);
        const taken = await Promise.all(files.map(take));
        const rest = files.flatMap((_, i) => (taken[i] ? [] : [i]));
        const others =
          rest.length > 0
            ? extractMany(
                rest.map((i) => files[i]!),
                options,
              )
            : undefined;
        // Awaited after the files read ahead: its failure is not unhandled meanwhile.
        others?.catch(() => undefined);
        const ahead = await Promise.all(taken.map((t) => t && untilAborted(t.read, options?.signal)));
        const read = (await others) ?? [];
        rest.forEach((i, k) => {
          ahead[i] = read[k]!;
        });
        return ahead as Read[];
      },
    },
  });
  return { extractor: wrapped, headStart };
}
