import type { FileOutcome, PassFile } from './pipeline-parts.js';

/** Most files of one pipeline pass (the local `kilde ingest`'s `--batch` default too). */
export const DEFAULT_PASS_FILES = 128;
/** Most bytes of files in one pass; a larger file is not coalesced (it goes alone). */
export const PASS_BYTES = 1 << 20;

interface Waiting {
  file: PassFile & { bytes: number };
  resolve(settled: PassSettled): void;
}

/** A file's outcome, and how many files its pass held. */
export interface PassSettled {
  outcome: FileOutcome;
  files: number;
}

/**
 * Coalesces concurrent ingests of small files into pipeline passes (`runPass`, pipeline.ts): each
 * request is a file of the next pass. Up to `inFlight` passes run at once; a file that arrives while
 * they all run waits, with every other file arriving meanwhile, for the next — so under load many
 * requests share one extraction task, one chunking task, one embedding call and one commit, as one
 * `kilde ingest` pass does, and a request that finds a pass slot free starts at once (a turn of the
 * event loop later, so the files of one burst still go together). Each file settles on its own:
 * its own outcome, its own caller's signal (`PassFile.signal`) and progress.
 */
export class PassQueue {
  #waiting: Waiting[] = [];
  #running = 0;
  #scheduled = false;

  constructor(
    private readonly runPass: (files: PassFile[]) => Promise<FileOutcome[]>,
    private readonly o: { inFlight: number; maxFiles: number; maxBytes: number },
  ) {}

  /** The file's outcome once the pass it joined has run. */
  add(file: PassFile & { bytes: number }): Promise<PassSettled> {
    return new Promise<PassSettled>((resolve) => {
      this.#waiting.push({ file, resolve });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#running >= this.o.inFlight) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#start();
    });
  }

  #start(): void {
    while (this.#running < this.o.inFlight && this.#waiting.length > 0) {
      const pass = this.#take();
      this.#running += 1;
      void this.runPass(pass.map((w) => w.file))
        .then(
          (outcomes) => {
            pass.forEach((w, k) => {
              const outcome = outcomes[k] ?? { ok: false, error: new Error('file was not processed') };
              w.resolve({ outcome, files: pass.length });
            });
          },
          (error: unknown) => {
            for (const w of pass) w.resolve({ outcome: { ok: false, error }, files: pass.length });
          },
        )
        .finally(() => {
          this.#running -= 1;
          if (this.#waiting.length > 0) this.#schedule();
        });
    }
  }

  /** The next pass: files in arrival order, at most `maxFiles` and about `maxBytes`. */
  #take(): Waiting[] {
    let bytes = 0;
    let n = 0;
    while (n < this.#waiting.length && n < this.o.maxFiles) {
      const size = this.#waiting[n]!.file.bytes;
      if (n > 0 && bytes + size > this.o.maxBytes) break;
      bytes += size;
      n += 1;
    }
    return this.#waiting.splice(0, n);
  }
}
